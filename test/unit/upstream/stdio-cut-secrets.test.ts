// What Gatehouse logs of a stdio child's output is cut short: a stderr line at 4096 characters, a stdout
// line that is not JSON at 200. The configured secret values are scrubbed from every log line, but they
// were scrubbed after the cut: a credential the cut ran through was no longer whole, was not recognised,
// and all of it before the cut reached the log (with a 40-character key, 20 of its characters). A server
// printing its environment or settings on one long line puts a key anywhere in it (docs/security.md: a
// stdio upstream's credentials in the logs). A real child, a real logger with the secret registered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { createLogger, REDACTED } from '../../../src/log/logger.js';
import { StdioProcess } from '../../../src/upstream/stdio-process.js';

const CHILD = fileURLToPath(new URL('../../fixtures/upstreams/cut-secret-stdio.mjs', import.meta.url));
const SECRET = 'svc-4f2a9c1e7b3d5a8f0e6c2b9d4a7f1e3c5b8d0a2f';

/** Every 6-character piece of the secret: none may appear in a log line. */
const PIECES = Array.from({ length: SECRET.length - 5 }, (_, i) => SECRET.slice(i, i + 6));

test('a credential a stdio line is cut through is scrubbed before the cut: no piece of it reaches the log', async () => {
  const lines: string[] = [];
  const log = createLogger('info', (line) => void lines.push(line), {}, { secrets: [SECRET] });
  const proc = new StdioProcess({ upstream: 'cut', command: [process.execPath, CHILD], env: { SERVICE_CRED: SECRET }, requestTimeoutMs: 5_000 }, log);
  const gone = new Promise<void>((resolve) => (proc.onExit = () => resolve()));
  await proc.start();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([gone, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('the child did not exit within 10 s')), 10_000)))]);
  } finally {
    clearTimeout(timer);
    await proc.stop(500);
  }
  const stderr = lines.filter((l) => l.includes('"stdio upstream stderr"'));
  const stdout = lines.filter((l) => l.includes('that is not JSON'));
  assert.equal(stderr.filter((l) => l.includes('xxxx')).length, 2, 'both long stderr lines were logged');
  assert.equal(stdout.length, 1, 'the stdout line was logged');
  for (const line of lines) {
    const leaked = PIECES.filter((p) => line.includes(p));
    assert.deepEqual(leaked, [], `a piece of the credential in the log: ${line.slice(-300)}`);
  }
  for (const line of [...stderr.filter((l) => l.includes('xxxx')), ...stdout]) assert.ok(line.includes(REDACTED), `the credential is shown redacted: ${line.slice(-120)}`);
});
