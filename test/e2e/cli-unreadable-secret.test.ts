// A `${file:PATH}` secret the operator's own user may not read (mounted for the gateway's user only, mode
// 0400 of another owner) is out of reach the way a missing one is: a command that needs no secret
// (`check-config --env-optional`, as `audit --config` and `budgets --config` load it) warns and goes on,
// where it used to fail. Without --env-optional it is still an error. The CLI runs without the
// capabilities that let root read any file (tests run as root here), so a mode-000 file is EACCES to it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/cli.js';

const MAIN = join(ROOT, 'dist', 'main.js');

/** The CLI, as a user that cannot read a file whose mode is 000. */
function runUnprivileged(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const asRoot = process.getuid?.() === 0;
  const [cmd, argv] = asRoot ? ['setpriv', ['--bounding-set=-dac_override,-dac_read_search', '--', process.execPath, MAIN, ...args]] : [process.execPath, [MAIN, ...args]];
  return new Promise((resolve) => {
    execFile(cmd, argv, { cwd: ROOT, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

test('a secret file the user may not read is warned about under --env-optional, and an error without it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-unreadable-'));
  const secret = join(dir, 'upstream-token');
  writeFileSync(secret, 'not-for-this-user\n');
  chmodSync(secret, 0o000);
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(file, 'upstreams: [{ name: a, url: "http://127.0.0.1:3001/mcp", headers: { Authorization: "Bearer ${file:upstream-token}" } }]\nauth: { anonymous: true }\n');

  const lenient = await runUnprivileged(['check-config', '--env-optional', file]);
  assert.equal(lenient.code, 0, lenient.stderr);
  assert.match(lenient.stdout, /ok \(1 secret not present here\)/);
  assert.match(lenient.stderr, /^warning: .*gatehouse\.yaml:1:\d+ upstreams\[0\]\.headers\.Authorization: cannot read file "upstream-token": EACCES$/m);
  assert.doesNotMatch(lenient.stdout + lenient.stderr, /not-for-this-user/);

  const strict = await runUnprivileged(['check-config', file]);
  assert.equal(strict.code, 1);
  assert.match(strict.stderr, /upstreams\[0\]\.headers\.Authorization: cannot read file "upstream-token": EACCES/);
});

test('a secret path that names a directory stays an error under --env-optional', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-unreadable-'));
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(file, `upstreams: [{ name: a, url: "http://127.0.0.1:3001/mcp", headers: { Authorization: "Bearer \${file:${dir}}" } }]\nauth: { anonymous: true }\n`);
  const r = await runUnprivileged(['check-config', '--env-optional', file]);
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stderr, /cannot read file ".*": EISDIR/);
});
