// `gatehouse audit export` and `tail` read the log a page (1,000 records) at a time, each page after the
// seq of the last record of the one before, as that record's text gives it. A record whose stored text was
// edited to claim an earlier seq, at the end of a page, sent the next read back over records already read:
// export printed them twice, exit 0 (claim 10), or printed the first page again and again and never ended
// (claim 0: 367,000 lines in 5 s). Now seqs must rise: export and tail stop at the record that goes back,
// exit 1, naming its claim and pointing to `verify` (which judges the record itself, and always ended).
// (tail read the whole log at its start too, and met the record there; it now starts where the log ends.)

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { auditCommand } from '../../../src/cli/audit.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';
import type { AuditRecord } from '../../../src/store/store.js';

const RECORDS = 1_500;
const logs = new Map<number, string>();

/** A log of RECORDS records whose record 1,000 (the last of the first page) claims seq `claim`. */
async function log(claim: number): Promise<string> {
  const path = join(mkdtempSync(join(tmpdir(), 'gatehouse-audit-order-')), 'audit.db');
  const store = new SqliteStore(path);
  for (let i = 1; i <= RECORDS; i += 250) {
    await Promise.all(Array.from({ length: 250 }, (_, k) => store.appendAudit({ time: new Date().toISOString(), callId: `c${i + k}`, runId: `r${i + k}`, subject: 'alice', method: 'tools/call', tool: 'lookup', outcome: 'ok', latencyMs: 1 }, 250)));
  }
  await store.close();
  const db = new Database(path);
  const row = db.prepare('SELECT record FROM audit WHERE seq = 1000').get() as { record: string };
  db.prepare('UPDATE audit SET record = ? WHERE seq = 1000').run(JSON.stringify({ ...(JSON.parse(row.record) as AuditRecord), seq: claim }));
  db.close();
  return path;
}

before(async () => {
  for (const claim of [10, 0]) logs.set(claim, await log(claim));
});

/** Runs the command with an output that gives up (throws) past `most` lines, so a loop ends the test instead of hanging it. */
async function bounded(args: string[], most: number, signal?: AbortSignal): Promise<{ code: number; lines: number; err: string }> {
  let lines = 0;
  const err: string[] = [];
  const io = {
    out: (t: string) => {
      lines += t.split('\n').length - 1;
      if (lines > most) throw new Error(`more than ${most} lines written`);
    },
    err: (t: string) => void err.push(t),
    readStdin: async () => '',
    env: {},
  };
  const code = await auditCommand(args, io, signal);
  return { code, lines, err: err.join('') };
}

describe('audit on a log whose records go back', () => {
  for (const claim of [10, 0]) {
    it(`export stops at a record claiming seq ${claim} after 999, exit 1, having printed no record twice`, { timeout: 60_000 }, async () => {
      const r = await bounded(['export', '--store', logs.get(claim)!], 3 * RECORDS);
      assert.doesNotMatch(r.err, /more than/, 'export went round the same records');
      assert.equal(r.code, 1, r.err);
      assert.equal(r.lines, 1000, 'records 1 to 999, and the one that goes back');
      assert.match(r.err, new RegExp(`the audit record after record 999 claims seq ${claim}, not a later one`));
      assert.match(r.err, /gatehouse audit verify/);
    });
  }

  it('tail, which reads only the records written after it starts, follows from where the log ends', { timeout: 60_000 }, async () => {
    const stop = new AbortController();
    const running = bounded(['tail', '--store', logs.get(10)!, '--interval-ms', '50'], 0, stop.signal);
    await new Promise((r) => setTimeout(r, 300));
    stop.abort();
    const r = await running;
    assert.equal(r.code, 0, r.err);
    assert.match(r.err, new RegExp(`following the audit log after record ${RECORDS};`));
  });

  it('verify still names the record itself as the break', async () => {
    const r = await bounded(['verify', '--store', logs.get(10)!], 0);
    assert.equal(r.code, 1);
    assert.match(r.err, /^audit chain broken at record 10: record 10 is out of order or repeated; 999 records before it verify\n$/);
  });
});
