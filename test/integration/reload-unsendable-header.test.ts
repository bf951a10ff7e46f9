// A header value an HTTP request cannot carry (a line break, a control character, a character outside
// Latin-1): the schema takes any string, and a secret read through ${file:...} or ${env:...} brings such
// characters in (a mounted file ending in two newlines loses only the last). Until 4 December such a config
// checked "ok", started, and a reload applied it: every call to the upstream then failed with 502 "invalid
// authorization header" (retryable: true), the working config gone. DESIGN.md §3: an invalid new version is
// refused, logged and counted, and the old one stays; the semantic checks now refuse it, by key, never by value.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkConfigCommand } from '../../src/cli/check-config.js';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { reloadTaken } from '../helpers/file-reload.js';
import { startGatewayFromConfigFile } from '../helpers/gateway.js';
import { post, rpc } from '../helpers/http.js';
import { replaceLikeSecretVolume } from '../helpers/secret-volume.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function configText(upstreamUrl: string, dir: string): string {
  return (
    `listen: { port: 0 }\nupstreams: [{ name: up, url: "${upstreamUrl}", era: legacy, headers: { authorization: "Bearer \${file:upstream-token}" } }]\n` +
    `auth: { anonymous: true }\nidempotency: { requireKeys: false }\nstore: { kind: sqlite, path: ${JSON.stringify(join(dir, 'g.db'))} }\nshutdown: { graceMs: 100 }\n`
  );
}

test('a rotated secret that would put a line break in an upstream header is refused at reload; the running credential stays', async () => {
  const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
  cleanups.push(() => up.close());
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-unsendable-'));
  const file = join(dir, 'gatehouse.yaml');
  const secret = join(dir, 'upstream-token');
  replaceLikeSecretVolume(secret, 'working-credential\n');
  writeFileSync(file, configText(up.url, dir));
  const { gateway, url, logs } = await startGatewayFromConfigFile(file);
  cleanups.push(() => gateway.close());
  const lastCredential = (): string | undefined => up.requests.at(-1)?.headers.authorization;
  assert.equal((await post(url, rpc(1, 'tools/list'))).status, 200);
  assert.equal(lastCredential(), 'Bearer working-credential');

  // Written with an extra blank line: the load strips one newline, the other stays in the value.
  replaceLikeSecretVolume(secret, 'broken-credential\n\n');
  // Taken by the watcher's poll or by this look, whichever came first: the refusal is what is waited for.
  assert.ok(await reloadTaken(gateway, () => gateway.reloads.refused > 0), JSON.stringify(logs.map((l) => l.msg)));
  assert.deepEqual(gateway.reloads, { applied: 0, refused: 1 });
  const cause = logs.find((l) => l.msg === 'config reload: a file the config reads changed');
  assert.deepEqual(cause?.files, [secret], 'the reload names the rotated secret file');
  const response = await post(url, rpc(2, 'tools/list'));
  assert.equal(response.status, 200, 'the running config still reaches the upstream');
  assert.equal(lastCredential(), 'Bearer working-credential');
  const refused = logs.find((l) => l.msg === 'config reload refused; the running config stays');
  assert.ok(refused !== undefined, JSON.stringify(logs));
  assert.match(JSON.stringify(refused.problems), /upstreams\[0\]\.headers\.authorization: /);
  assert.doesNotMatch(JSON.stringify(logs), /broken-credential|working-credential/, 'no value is logged');
});

test('check-config exits 1 on such a value, naming the key and not the value; tracing.headers and characters outside Latin-1 too', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-unsendable-'));
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(join(dir, 'upstream-token'), 'a-secret-credential\r\n\r\n');
  writeFileSync(
    file,
    'upstreams: [{ name: up, url: "http://127.0.0.1:3001/mcp", headers: { authorization: "Bearer ${file:upstream-token}", x-tab: "a\\tb", x-latin: "caf\\u00e9" } }]\n' +
      'auth: { anonymous: true }\ntracing: { enabled: true, endpoint: "http://127.0.0.1:4318", headers: { x-api-key: "${env:TRACE_KEY}" } }\n',
  );
  const out: string[] = [];
  const err: string[] = [];
  const code = await checkConfigCommand([file], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: { TRACE_KEY: 'k\u20acy' } });
  assert.equal(code, 1, out.join(''));
  const text = err.join('');
  assert.match(text, /upstreams\[0\]\.headers\.authorization: /);
  assert.match(text, /tracing\.headers\.x-api-key: /);
  // A tab and Latin-1 letters are field characters (RFC 9110 §5.5): those headers pass.
  assert.doesNotMatch(text, /x-tab|x-latin/);
  assert.doesNotMatch(text, /a-secret-credential|k\u20acy/);
});
