// A fault nothing caught (an uncaught exception, an unhandled rejection) ends the process as Node would,
// with exit code 1 (fail closed: the gateway does not keep serving in a state nobody knows), but says so
// in one JSON `error` line through the logger, scrubbed as every line is, instead of Node's raw stack on
// stderr, which quotes the error's message (request data, a token) and breaks the JSON-lines stream a log
// shipper reads. The fault is injected on purpose (test/fixtures/crash-on-signal.mjs) into the built
// dist/main.js.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { serveCli } from '../helpers/cli.js';

const CRASH = fileURLToPath(new URL('../fixtures/crash-on-signal.mjs', import.meta.url));
/** An upstream's static header value: a configured secret (config/secrets.ts), of no credential shape. */
const SECRET = 'acme-upstream-key-5d0e3b19c4';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function upstream(): Promise<FakeUpstream> {
  const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
  cleanups.push(() => up.close());
  return up;
}

for (const kind of ['throw', 'reject'] as const) {
  test(`an ${kind === 'throw' ? 'uncaught exception' : 'unhandled rejection'} is one scrubbed JSON error line, then exit 1`, async () => {
    const up = await upstream();
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-crash-'));
    const file = join(dir, 'gatehouse.yaml');
    writeFileSync(file, `listen: { port: 0 }\nupstreams: [{ name: up, url: "${up.url}", headers: { x-acme-key: "${SECRET}" } }]\nauth: { anonymous: true }\nlog: { format: json }\n`);
    const gw = await serveCli(['--config', file], { nodeArgs: ['--import', CRASH], env: { ...process.env, CRASH: kind, CRASH_SECRET: SECRET } });
    cleanups.push(() => gw.stop());
    const before = gw.stderr().length;
    gw.child.kill('SIGUSR2');
    const code = await Promise.race([gw.exited, new Promise((r) => setTimeout(() => r('still running'), 8000))]);
    assert.equal(code, 1, gw.stderr());
    const after = gw.stderr().slice(before);
    assert.ok(!after.includes(SECRET), after);
    assert.ok(!after.includes('eyJzdWIiOiJhIn0'), after);
    assert.doesNotMatch(after, /^\s+at /m, 'no raw stack');
    const lines = after.split('\n').filter((l) => l !== '');
    for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), `a JSON line: ${line}`);
    const crashed = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === 'error');
    assert.equal(crashed.length, 1, after);
    assert.equal(crashed[0]!.fault, kind === 'throw' ? 'uncaughtException' : 'unhandledRejection');
    assert.match(String((crashed[0]!.err as { message?: unknown }).message), /handling .*failed/);
  });
}
