// `gatehouse hash-key` takes one key (or "-"): an option it does not know is a usage error, not a key. Before,
// `hash-key --salt-with-pepper` printed the hash of the text "--salt-with-pepper", which an operator could
// paste into auth.apiKeys believing it was something else. A key that does start with "-" goes after "--".

import assert from 'node:assert/strict';
import { it } from 'node:test';
import { hashKey } from '../../../src/auth/key-hash.js';
import { hashKeyCommand } from '../../../src/cli/hash-key.js';

async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await hashKeyCommand(args, { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => 'k'.repeat(20) + '\n', env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

it('refuses an unknown long or short option with usage (exit 2) and hashes nothing', async () => {
  for (const flag of ['--salt-with-pepper', '--unknown-flag', '-x']) {
    const r = await run(flag);
    assert.equal(r.code, 2, `${flag}: ${r.out}`);
    assert.equal(r.out, '', flag);
    assert.match(r.err, /Unknown option/, flag);
    assert.match(r.err, /Usage: gatehouse hash-key/, flag);
  }
  const withKey = await run('k'.repeat(20), '--verbose');
  assert.equal(withKey.code, 2, withKey.out);
  assert.equal(withKey.out, '');
});

it('still hashes a key, reads "-" from stdin, and takes a key starting with "-" after "--"', async () => {
  const key = 'gh_' + 'k'.repeat(40);
  assert.deepEqual(await run(key), { code: 0, out: `${hashKey(key)}\n`, err: '' });
  // Keys not of the gh_ shape are hashed with a note on stderr (auth.apiKeyPrefixes); stdout is the hash alone.
  const note = /^note: this key does not start with gh_.*auth\.apiKeyPrefixes/s;
  const fromStdin = await run('-');
  assert.deepEqual({ code: fromStdin.code, out: fromStdin.out }, { code: 0, out: `${hashKey('k'.repeat(20))}\n` });
  assert.match(fromStdin.err, note);
  const dashed = '--' + 'd'.repeat(30);
  const afterDashes = await run('--', dashed);
  assert.deepEqual({ code: afterDashes.code, out: afterDashes.out }, { code: 0, out: `${hashKey(dashed)}\n` });
  assert.match(afterDashes.err, note);
  assert.equal((await run('--help')).code, 0);
  assert.equal((await run('a'.repeat(20), 'b'.repeat(20))).code, 2);
});
