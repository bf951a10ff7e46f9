// An error that escapes a command reaches main.ts's last catch. It printed the error's raw stack to stderr:
// the message (which may quote request data or a credential) unscrubbed, and, for `serve`, a text line in
// the middle of the JSON-lines stream a log shipper reads, while the gateway went on serving with exit code 1
// pending. Now, once serve's logger exists, it is the same scrubbed JSON error line as an uncaught fault
// (log/fault-exit.ts) and the process exits 1 (fail closed); before a logger exists, one line with the
// error's name and message, credential shapes scrubbed, no stack. The error is injected on purpose
// (test/fixtures/throw-on-stdout.mjs) into the built dist/main.js.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { MAIN, ROOT } from '../helpers/cli.js';

const THROW = fileURLToPath(new URL('../fixtures/throw-on-stdout.mjs', import.meta.url));
/** An upstream's static header value: a configured secret (config/secrets.ts), of no credential shape. */
const SECRET = 'acme-upstream-key-7f21c0a9e4';
const JWT_PART = 'eyJzdWIiOiJhIn0';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Runs the CLI with the fixture loaded; resolves with its exit code and stderr (killed after 15 s). */
function run(args: string[], throwOn: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', THROW, MAIN, ...args], { cwd: ROOT, env: { ...process.env, THROW_ON: throwOn, CRASH_SECRET: SECRET }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

test('serve: an error escaping the command after the logger exists is one scrubbed JSON error line, then exit 1', async () => {
  const up: FakeUpstream = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
  cleanups.push(() => up.close());
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-escaped-'));
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(file, `listen: { port: 0 }\nupstreams: [{ name: up, url: "${up.url}", headers: { x-acme-key: "${SECRET}" } }]\nauth: { anonymous: true }\nlog: { format: json }\n`);
  // The connect banner is written once the gateway listens: the write throws out of serveCommand.
  const { code, stderr } = await run(['serve', '--config', file, '--store', join(dir, 'gatehouse.db')], 'Gatehouse is serving MCP at');
  assert.equal(code, 1, stderr);
  assert.ok(!stderr.includes(SECRET), stderr);
  assert.ok(!stderr.includes(JWT_PART), stderr);
  assert.doesNotMatch(stderr, /^\s+at /m, 'no raw stack');
  const lines = stderr.split('\n').filter((l) => l !== '');
  for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), `a JSON line: ${line}`);
  const errors = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === 'error');
  assert.equal(errors.length, 1, stderr);
  assert.equal(errors[0]!.fault, 'commandError');
  assert.match(String((errors[0]!.err as { message?: unknown }).message), /^writing .* failed$/);
  assert.ok(Array.isArray(errors[0]!.frames), 'where it came from, as frames');
});

test('a command without a logger: the escaped error is one line with its name and message, scrubbed, no stack', async () => {
  const { code, stderr } = await run(['--version'], 'gatehouse ');
  assert.equal(code, 1, stderr);
  assert.ok(!stderr.includes(JWT_PART), stderr);
  assert.doesNotMatch(stderr, /^\s+at /m, 'no raw stack');
  assert.match(stderr, /^gatehouse: Error: writing .*Bearer \[redacted\] failed\n$/);
});
