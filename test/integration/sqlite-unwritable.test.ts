// A SQLite store that answers reads but takes no writes: its disk full, its file system remounted
// read-only, its file read-only (SQLite then opens it read-only and says nothing). Store.ping promises the
// store "answers and can write" (store.ts), but the SQLite ping was `SELECT 1`, which such a file answers:
// the store guard's probe marked the store up a second after every failure and /readyz said ready, so a
// governed call ran upstream and then its audit record could not be written, a call run unaudited once a
// second. The ping now writes one row of a table of its own. Here the disk is "full" through the process's
// file size limit (RLIMIT_FSIZE, set with prlimit on this test's own process, as root may): every write that
// grows the database's write-ahead log fails with SQLITE_FULL, as on a full disk. And a file this user may
// only read, by a process that may not override file permissions (root may write any file, so as root the
// process runs without CAP_DAC_OVERRIDE): SQLite opens it read-only, answers `SELECT 1`, and refuses every
// write with SQLITE_READONLY.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway } from '../helpers/gateway.js';
import { assertRefusedWhileStoreTakesNoWrites, readyz, recordCall, untilServed } from '../helpers/store-outage.js';
import { openStore } from '../../src/store/open-store.js';

let up: CountingUpstream;
let dir: string;
before(async () => {
  up = await startCountingUpstream('modern');
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-full-'));
});
after(async () => {
  setFileSizeLimit('unlimited');
  await up.close();
  rmSync(dir, { recursive: true, force: true });
});

/** This process's largest file (SQLite's worker thread is in it), as a soft limit (the hard one stays, so it can be lifted again). */
function setFileSizeLimit(bytes: number | 'unlimited'): void {
  execFileSync('prlimit', ['--pid', String(process.pid), `--fsize=${bytes}:`]);
}

test('with the SQLite file unable to grow, /readyz says not ready and governed calls are refused before they run; back on its own', { timeout: 60_000 }, async () => {
  const path = join(dir, 'state.db');
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'sqlite', path } });
  try {
    assert.equal((await recordCall(gw, 'before')).status, 200);
    assert.equal((await readyz(gw)).status, 200);
    // The disk is full: nothing grows past what is written now.
    setFileSizeLimit(Math.max(statSync(`${path}-wal`).size, 1));
    await assertRefusedWhileStoreTakesNoWrites(gw, up, 'sqlite');
    setFileSizeLimit('unlimited');
    const back = await untilServed(() => recordCall(gw, 'after'));
    assert.equal(back.status, 200, back.text);
    assert.equal((await readyz(gw)).status, 200);
  } finally {
    setFileSizeLimit('unlimited');
    await gw.close();
  }
});

test('a SQLite file its user may only read fails the ping once the store is in use', { timeout: 60_000 }, async () => {
  const path = join(dir, 'read-only.db');
  const made = openStore({ kind: 'sqlite', path });
  await made.appendAudit({ time: new Date().toISOString(), callId: 'c0', runId: 'r0', subject: 'alice', method: 'tools/call', outcome: 'ok', latencyMs: 1 });
  // Pinged once, so the ping's own table is there: what fails below is the write, not the table's making.
  await made.ping();
  await made.close();
  chmodSync(path, 0o444);
  // Root may write any file: as root the child runs without the capabilities that override file permissions
  // (util-linux's setpriv), still as root, so it can read the checkout wherever it is (another user, such as
  // nobody, could not read one under a private temporary directory). Any other user cannot write it already.
  const node = [process.execPath, '--import', 'tsx', new URL('../fixtures/sqlite-readonly-ping.ts', import.meta.url).pathname, path];
  const [command, ...args] = process.getuid?.() === 0 ? ['setpriv', '--bounding-set=-dac_override,-dac_read_search', ...node] : node;
  const run = spawnSync(command!, args, { encoding: 'utf8', timeout: 30_000 });
  assert.equal(run.status, 0, run.stderr);
  const result = JSON.parse(run.stdout) as { append: string; ping: string };
  assert.match(result.append, /^failed: .*readonly/, 'the file takes no writes');
  assert.match(result.ping, /^failed: .*readonly/, 'so the ping fails, and the store is not marked up');
});
