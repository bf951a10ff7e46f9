// `gatehouse audit verify` of a copy of a SQLite store on read-only media (a forensic copy, a snapshot
// mounted read-only, a directory this user may only read). The store is in WAL mode, and SQLite reads a
// WAL database only with its -shm index beside it, which it must be able to create: the reader opened the
// file for writing (journal_mode, the schema), and in a directory it may not write, verify failed with
// "attempt to write a readonly database" (SQLITE_READONLY_DIRECTORY), so a copy kept for an audit could not
// be checked where it was kept. Readers now read such a store from a private copy in a temporary directory
// (its -wal too, so records not yet checkpointed are read), and never write beside the original.
// Root may write anything: as root the CLI runs without the capabilities that override file permissions
// (util-linux's setpriv), as test/integration/sqlite-unwritable.test.ts does.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openStore } from '../../src/store/open-store.js';
import { MAIN, ROOT } from '../helpers/cli.js';

const RECORDS = 5;
let dir: string;
/** A store as the gateway leaves it: its last records in the -wal, not yet checkpointed into the file. */
let live: string;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-verify-ro-'));
  const running = join(dir, 'running', 'state.db');
  mkdirSync(join(dir, 'running'));
  const store = openStore({ kind: 'sqlite', path: running });
  for (let i = 0; i < RECORDS; i++) await store.appendAudit({ time: new Date().toISOString(), callId: `c${i}`, runId: `r${i}`, subject: 'alice', method: 'tools/call', outcome: 'ok', latencyMs: 1 });
  // The files copied as they are while it runs (its close checkpoints the -wal into the file).
  mkdirSync(join(dir, 'live'));
  live = join(dir, 'live', 'state.db');
  for (const f of ['', '-wal', '-shm']) copyFileSync(`${running}${f}`, `${live}${f}`);
  await store.close();
  assert.ok(readFileSync(`${live}-wal`).length > 0, 'the records are in the -wal');
});
after(() => {
  // Writable again, so the temporary directory can go.
  for (const d of readdirSync(dir)) chmodSync(join(dir, d), 0o755);
  rmSync(dir, { recursive: true, force: true });
});

/** `gatehouse audit verify --store path`, as a user who may not write what its permissions deny. */
function verifyAsReader(path: string) {
  const node = [process.execPath, MAIN, 'audit', 'verify', '--store', path];
  const [command, ...args] = process.getuid?.() === 0 ? ['setpriv', '--bounding-set=-dac_override,-dac_read_search', ...node] : node;
  // Its own temporary directory, to see that the private copy is gone when it has finished.
  const temp = mkdtempSync(join(dir, 'tmp-'));
  const run = spawnSync(command!, args, { cwd: ROOT, encoding: 'utf8', timeout: 30_000, env: { ...process.env, TMPDIR: temp } });
  assert.deepEqual(readdirSync(temp), [], 'the private copy is removed');
  return run;
}

/** A directory holding copies of the store's files named, then made read-only (its files too). */
function readOnlyCopy(name: string, files: string[]): string {
  const to = join(dir, name);
  mkdirSync(to);
  for (const f of files) {
    copyFileSync(`${live}${f}`, join(to, `state.db${f}`));
    chmodSync(join(to, `state.db${f}`), 0o444);
  }
  chmodSync(to, 0o555);
  return join(to, 'state.db');
}

/** The files of a directory and their bytes: what a reader must leave as it found it. */
function snapshot(path: string): Record<string, string> {
  const d = join(path, '..');
  return Object.fromEntries(readdirSync(d).map((f) => [f, readFileSync(join(d, f)).toString('base64')]));
}

test('verify reads a checkpointed copy (the file alone) in a read-only directory', () => {
  // A clean close checkpoints the -wal into the file and removes it: the copy is the file alone.
  const clean = join(dir, 'clean', 'state.db');
  mkdirSync(join(dir, 'clean'));
  for (const f of ['', '-wal', '-shm']) if (existsSync(`${live}${f}`)) copyFileSync(`${live}${f}`, `${clean}${f}`);
  const db = new Database(clean);
  assert.equal(db.prepare<[], { n: number }>('SELECT count(*) AS n FROM audit').get()?.n, RECORDS);
  db.close();
  assert.equal(existsSync(`${clean}-wal`), false);
  const path = join(dir, 'clean-ro');
  mkdirSync(path);
  copyFileSync(clean, join(path, 'state.db'));
  chmodSync(join(path, 'state.db'), 0o444);
  chmodSync(path, 0o555);
  const copy = join(path, 'state.db');
  const before = snapshot(copy);
  const run = verifyAsReader(copy);
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, new RegExp(`^audit chain ok: ${RECORDS} records, last ${RECORDS}, head [0-9a-f]{64}\\n$`));
  assert.deepEqual(snapshot(copy), before, 'nothing was written beside the copy');
});

test('verify reads a copy with its -wal and -shm in a read-only directory, the records only in the -wal among them', () => {
  const copy = readOnlyCopy('with-wal', ['', '-wal', '-shm']);
  const before = snapshot(copy);
  const run = verifyAsReader(copy);
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, new RegExp(`^audit chain ok: ${RECORDS} records, last ${RECORDS}, head [0-9a-f]{64}\\n$`));
  assert.deepEqual(snapshot(copy), before, 'nothing was written beside the copy');
});

test('verify reads a copy with its -wal but no -shm in a read-only directory', () => {
  const copy = readOnlyCopy('wal-only', ['', '-wal']);
  const before = snapshot(copy);
  const run = verifyAsReader(copy);
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, new RegExp(`^audit chain ok: ${RECORDS} records, last ${RECORDS}, head [0-9a-f]{64}\\n$`));
  assert.deepEqual(snapshot(copy), before, 'nothing was written beside the copy');
});
