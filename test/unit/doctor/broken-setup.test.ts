// `gatehouse doctor` on a broken setup reports it, row by row, and exits 1; it never crashes with a stack
// trace in place of its report (DESIGN.md §4: exit 1 when a check fails).

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { doctorCommand } from '../../../src/cli/doctor.js';

it('an upstream URL no parser takes is a failed row of that upstream, and the store is still checked', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-doctor-broken-'));
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(file, `upstreams:\n  - { name: up, url: "http://127.0.0.1:99999/mcp" }\nauth: { anonymous: true }\nstore: { kind: sqlite, path: ${JSON.stringify(join(dir, 'g.db'))} }\n`);
  const out: string[] = [];
  const err: string[] = [];
  const code = await doctorCommand(['--config', file, '--json', '--skip', 'ports', '--timeout-ms', '2000'], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
  assert.equal(code, 1, err.join(''));
  const report = JSON.parse(out.join('')) as { checks: Array<{ check: string; verdict: string; detail: string }> };
  const row = (check: string) => report.checks.find((c) => c.check === check);
  assert.equal(row('upstream up')?.verdict, 'fail', JSON.stringify(report.checks));
  assert.equal(row('store')?.verdict, 'ok', JSON.stringify(report.checks));
});

it('a stdio command line is printed without the credentials servers take as arguments', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-doctor-args-'));
  const file = join(dir, 'gatehouse.yaml');
  const program = join(dir, 'no-such-server');
  const command = [program, 'serve.mjs', '--api-key', 'sk-live-secret-one', '--access-token=secret-two', 'postgres://app:db-secret-three@db:5432/app', '--verbose'];
  writeFileSync(file, `upstreams:\n  - name: local\n    command: ${JSON.stringify(command)}\nauth: { anonymous: true }\n`);
  const out: string[] = [];
  const code = await doctorCommand(['--config', file, '--json', '--skip', 'ports', '--skip', 'store', '--timeout-ms', '2000'], { out: (t) => out.push(t), err: () => {}, readStdin: async () => '', env: {} });
  assert.equal(code, 1);
  const text = out.join('');
  for (const secret of ['sk-live-secret-one', 'secret-two', 'db-secret-three']) assert.ok(!text.includes(secret), `${secret} printed: ${text}`);
  // What is not a credential is still there to recognise the command by.
  for (const kept of ['no-such-server', 'serve.mjs', '--api-key', '--access-token=', 'postgres://app:', '@db:5432/app', '--verbose']) assert.ok(text.includes(kept), `${kept} missing: ${text}`);
});

it('a --timeout-ms past what a timer can hold is a usage error, not a failed check of a healthy store', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-doctor-timeout-'));
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(file, `upstreams:\n  - { name: up, url: "http://127.0.0.1:1/mcp" }\nauth: { anonymous: true }\nstore: { kind: sqlite, path: ${JSON.stringify(join(dir, 'g.db'))} }\n`);
  const run = async (ms: string) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await doctorCommand(['--config', file, '--json', '--skip', 'ports', '--skip', 'upstreams', '--timeout-ms', ms], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
    return { code, out: out.join(''), err: err.join('') };
  };
  const huge = await run('9999999999');
  assert.equal(huge.code, 2, huge.out);
  assert.match(huge.err, /--timeout-ms and --wait-ms take a whole number of milliseconds, at most 86400000/);
  const day = await run('86400000');
  assert.equal(day.code, 0, day.out + day.err);
});
