// `gatehouse audit verify|export|tail`, run as an operator runs them (the built CLI, a real SQLite file).
// Tampering (issue 12, "Shown by"): an edited, a deleted and an inserted record each make `verify` fail
// and name the record; a log rewritten from some record on, or cut short, is found against a head hash kept
// from an earlier verify. export filters by time, tool and subject; tail follows new records.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { auditHash } from '../../src/store/audit-chain.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import type { AuditEntry, AuditRecord } from '../../src/store/store.js';
import { MAIN, ROOT, runCli } from '../helpers/cli.js';

const T0 = Date.parse('2026-11-01T00:00:00Z');
const HOUR = 3_600_000;
let pristine: string;

function entry(i: number): AuditEntry {
  return {
    time: new Date(T0 + i * HOUR).toISOString(),
    callId: `call-${i}`,
    runId: `run-${i}`,
    subject: i % 2 ? 'key:ci-bot' : 'alice@example.com',
    toolRef: i % 3 ? 'crm/create_contact' : 'crm/search',
    tool: i % 3 ? 'create_contact' : 'search',
    upstream: 'crm',
    method: 'tools/call',
    outcome: 'ok',
    latencyMs: 3,
  };
}

before(async () => {
  pristine = join(mkdtempSync(join(tmpdir(), 'gatehouse-audit-cli-')), 'pristine.db');
  const store = new SqliteStore(pristine);
  for (let i = 1; i <= 10; i++) await store.appendAudit(entry(i));
  await store.close();
});

/** A copy of the pristine log to tamper with. */
function copy(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'gatehouse-tamper-')), 'audit.db');
  copyFileSync(pristine, path);
  return path;
}

function tamper(path: string, change: (db: Database.Database, read: (seq: number) => AuditRecord) => void): void {
  const db = new Database(path);
  const read = (seq: number) => JSON.parse((db.prepare('SELECT record FROM audit WHERE seq = ?').get(seq) as { record: string }).record) as AuditRecord;
  change(db, read);
  db.close();
}

const write = (db: Database.Database, column: number, r: AuditRecord) => db.prepare('INSERT OR REPLACE INTO audit (seq, time_ms, record) VALUES (?, ?, ?)').run(column, Date.parse(r.time), JSON.stringify(r));
const rehashed = (r: Omit<AuditRecord, 'hash'> & { hash?: string }): AuditRecord => {
  const { hash: _old, ...rest } = r;
  return { ...rest, hash: auditHash(rest) };
};

describe('gatehouse audit verify', () => {
  test('an intact log verifies and prints its head hash', async () => {
    const out = await runCli(['audit', 'verify', '--store', pristine]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /^audit chain ok: 10 records, last 10, head [0-9a-f]{64}\n$/);
  });

  test('an edited record is named', async () => {
    const path = copy();
    tamper(path, (db, read) => write(db, 4, { ...read(4), outcome: 'refused' }));
    const out = await runCli(['audit', 'verify', '--store', path]);
    assert.equal(out.code, 1);
    assert.match(out.stderr, /^audit chain broken at record 4: its content does not match its hash \(the record was edited\); 3 records before it verify\n$/);
  });

  test('an edited record whose hash was recomputed breaks the link to the next one', async () => {
    const path = copy();
    tamper(path, (db, read) => write(db, 4, rehashed({ ...read(4), subject: 'someone-else' })));
    const out = await runCli(['audit', 'verify', '--store', path]);
    assert.equal(out.code, 1);
    assert.match(out.stderr, /^audit chain broken at record 5: its prev does not match the hash of the record before it/);
  });

  test('a deleted record is named', async () => {
    const path = copy();
    tamper(path, (db) => db.prepare('DELETE FROM audit WHERE seq = 6').run());
    const out = await runCli(['audit', 'verify', '--store', path]);
    assert.equal(out.code, 1);
    assert.match(out.stderr, /^audit chain broken at record 7: records 6–6 are missing; 5 records before it verify\n$/);
  });

  test('an inserted record is found where it breaks the chain', async () => {
    const path = copy();
    tamper(path, (db, read) => {
      // Make room after record 2 (rows and their seq fields move up), then forge a record chained to 2.
      const later = Array.from({ length: 8 }, (_, i) => read(10 - i));
      db.prepare('DELETE FROM audit WHERE seq >= 3').run();
      for (const r of later) write(db, r.seq + 1, { ...r, seq: r.seq + 1 });
      write(db, 3, rehashed({ ...entry(99), seq: 3, prev: read(2).hash }));
    });
    const out = await runCli(['audit', 'verify', '--store', path]);
    assert.equal(out.code, 1);
    // Record 4 (the old 3) no longer hashes to itself once renumbered, and its prev is not the forgery's hash.
    assert.match(out.stderr, /^audit chain broken at record 4: /);
  });

  test('a log rewritten from some record on links up again, but not with the head kept from before', async () => {
    const before = await runCli(['audit', 'verify', '--store', pristine]);
    const head = /head ([0-9a-f]{64})/.exec(before.stdout)![1]!;
    const path = copy();
    tamper(path, (db, read) => {
      // The thorough forger: edit record 5 and rebuild every hash after it.
      let prev = read(4).hash;
      for (let seq = 5; seq <= 10; seq++) {
        const r = rehashed({ ...read(seq), prev, ...(seq === 5 ? { outcome: 'refused' } : {}) });
        write(db, seq, r);
        prev = r.hash;
      }
    });
    assert.equal((await runCli(['audit', 'verify', '--store', path])).code, 0, 'an unkeyed chain cannot tell on its own');
    const withHead = await runCli(['audit', 'verify', '--store', path, '--head', head]);
    assert.equal(withHead.code, 1);
    assert.match(withHead.stderr, /does not hold the head/);
    const truncated = copy();
    tamper(truncated, (db) => db.prepare('DELETE FROM audit WHERE seq = 10').run());
    assert.equal((await runCli(['audit', 'verify', '--store', truncated, '--head', head])).code, 1, 'the last record removed');
    assert.equal((await runCli(['audit', 'verify', '--store', pristine, '--head', head])).code, 0);
  });

  test('bad input is refused plainly: no such store, a malformed head, an unknown command', async () => {
    const missing = await runCli(['audit', 'verify', '--store', join(tmpdir(), 'no-such-dir-gatehouse', 'x.db')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no store at /);
    const head = await runCli(['audit', 'verify', '--store', pristine, '--head', 'abc']);
    assert.equal(head.code, 2);
    assert.match(head.stderr, /is not a SHA-256 hash/);
    const unknown = await runCli(['audit', 'rewrite', '--store', pristine]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown audit command "rewrite"/);
    const none = await runCli(['audit']);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^Usage: gatehouse audit/);
    const help = await runCli(['audit', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /verify {4}walk the hash chain/);
  });
});

describe('gatehouse audit export', () => {
  const lines = (stdout: string) =>
    stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditRecord);

  test('writes every record as a JSON line, in order', async () => {
    const out = await runCli(['audit', 'export', '--store', pristine]);
    assert.equal(out.code, 0, out.stderr);
    const records = lines(out.stdout);
    assert.deepEqual(
      records.map((r) => r.seq),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    );
    assert.equal(records[0]!.callId, 'call-1');
  });

  test('filters by time, tool (public name or ref) and subject, together', async () => {
    const since = new Date(T0 + 2 * HOUR).toISOString();
    const until = new Date(T0 + 8 * HOUR).toISOString();
    const byTime = lines((await runCli(['audit', 'export', '--store', pristine, '--since', since, '--until', until])).stdout);
    assert.deepEqual(
      byTime.map((r) => r.seq),
      [2, 3, 4, 5, 6, 7, 8],
    );
    const byTool = lines((await runCli(['audit', 'export', '--store', pristine, '--tool', 'search'])).stdout);
    assert.deepEqual(
      byTool.map((r) => r.seq),
      [3, 6, 9],
    );
    assert.deepEqual(lines((await runCli(['audit', 'export', '--store', pristine, '--tool', 'crm/search'])).stdout).map((r) => r.seq), [3, 6, 9]);
    const all = lines((await runCli(['audit', 'export', '--store', pristine, '--subject', 'key:ci-bot', '--tool', 'create_contact', '--since', since])).stdout);
    assert.deepEqual(
      all.map((r) => r.seq),
      [5, 7],
    );
  });

  test('an unreadable time is refused', async () => {
    const out = await runCli(['audit', 'export', '--store', pristine, '--since', 'last tuesday']);
    // A value the command cannot use is usage (exit 2), as --head's is.
    assert.equal(out.code, 2);
    assert.match(out.stderr, /--since "last tuesday" is not a date or time/);
  });
});

describe('gatehouse audit tail', () => {
  test('prints records written after it started, filtered, until interrupted', { timeout: 30_000 }, async () => {
    const path = copy();
    const child = spawn(process.execPath, [MAIN, 'audit', 'tail', '--store', path, '--interval-ms', '100', '--subject', 'key:ci-bot'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      for (let i = 0; i < 100 && !stderr.includes('following'); i++) await new Promise((r) => setTimeout(r, 50));
      assert.match(stderr, /following the audit log after record 10/);
      const store = new SqliteStore(path);
      for (let i = 11; i <= 14; i++) await store.appendAudit(entry(i));
      await store.close();
      for (let i = 0; i < 100 && stdout.trim().split('\n').filter(Boolean).length < 2; i++) await new Promise((r) => setTimeout(r, 50));
      const seen = stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as AuditRecord);
      assert.deepEqual(
        seen.map((r) => [r.seq, r.subject]),
        [
          [11, 'key:ci-bot'],
          [13, 'key:ci-bot'],
        ],
      );
    } finally {
      child.kill('SIGINT');
    }
    assert.equal(await exited, 0);
  });

  test('a bad interval is refused', async () => {
    const out = await runCli(['audit', 'tail', '--store', pristine, '--interval-ms', 'soon']);
    // A value the command cannot use is usage (exit 2), as --head's is.
    assert.equal(out.code, 2);
    assert.match(out.stderr, /--interval-ms "soon" must be a whole number/);
  });
});
