// A key is presented only as `Authorization: Bearer <key>` (README §Authentication), and RFC 6750 §2.1 lets
// that credential hold letters, digits and - . _ ~ + / only, with = at its end (b64token). `gatehouse
// hash-key KEY` hashed any text of 16 characters or more: a passphrase with a space, a password with ! or #,
// or one read from stdin with a trailing space gave a hash whose key the edge can never accept (400
// malformed_authorization, counted as a failed attempt of the client's address). It is refused instead.

import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Authenticator } from '../../../src/auth/authenticator.js';
import { hashKey } from '../../../src/auth/key-hash.js';
import { hashKeyCommand } from '../../../src/cli/hash-key.js';
import { validateConfigObject } from '../../../src/config/load.js';
import { createLogger } from '../../../src/log/logger.js';

async function run(stdin: string, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await hashKeyCommand(args, { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => stdin, env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

const edgeWith = (key: string): Authenticator =>
  new Authenticator(validateConfigObject({ upstreams: [{ name: 'u', url: 'http://127.0.0.1:1/mcp' }], auth: { apiKeys: [{ id: 'k', hash: hashKey(key), scopes: [] }] } }, 'test'), createLogger('error', () => {}));

it('refuses a key the Authorization header cannot carry, and prints no hash for it', async () => {
  for (const key of ['correct horse battery staple', 'p@ssw0rd!p@ssw0rd#1', 'key=with=equals=inside', 'ünïcödé-key-0123456789']) {
    // What the edge does with such a key: a malformed header, never the key's principal.
    const verdict = edgeWith(key).authenticate({ authorization: `Bearer ${key}` });
    assert.ok(!(verdict instanceof Promise) && !verdict.ok && verdict.refusal.status === 400, key);
    const r = await run('', key);
    assert.equal(r.code, 1, `${key}: ${r.out}`);
    assert.equal(r.out, '', key);
    assert.match(r.err, /Authorization: Bearer/, key);
  }
  const fromStdin = await run('a-long-enough-key-0123456789 \n', '-');
  assert.equal(fromStdin.code, 1, 'a trailing space read from stdin is refused, not hashed into the key');
  assert.equal(fromStdin.out, '');
});

it('hashes every key the header can carry, and the edge accepts it', async () => {
  for (const key of ['gh_' + 'k'.repeat(40), 'Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA+/==', 'a.b-c_d~e+f/g0123456789']) {
    const r = await run('', key);
    assert.deepEqual({ code: r.code, out: r.out }, { code: 0, out: `${hashKey(key)}\n` }, key);
    // stderr holds at most the note on keys not of the gh_ shape (auth.apiKeyPrefixes), never a refusal.
    if (key.startsWith('gh_')) assert.equal(r.err, '', key);
    else assert.match(r.err, /^note: .*auth\.apiKeyPrefixes/s, key);
    const verdict = edgeWith(key).authenticate({ authorization: `Bearer ${key}` });
    assert.ok(!(verdict instanceof Promise) && verdict.ok && verdict.principal.keyId === 'k', key);
  }
});
