// The SQLite store reads the audit log a page at a time (`gatehouse audit verify|export|tail`): the records
// after a seq, in seq order, within a time window (the whole of time when none is asked). SQLite ran that
// query through the time index, which a window of all time does not narrow, and sorted every record of the
// log to give the first thousand: each page cost the whole log, and a walk of the log its square (a 1 GB
// log took 27 s to verify, almost all of it sorting; a million records, hours). The read now walks the
// table's primary key in seq order, and the window is a filter on the rows it passes.

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, test } from 'node:test';
import Database from 'better-sqlite3';
import { AUDIT_AFTER_SQL } from '../../../src/store/sqlite-audit-reads.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';

const T0 = Date.parse('2026-11-01T00:00:00Z');
let path: string;

before(async () => {
  path = join(mkdtempSync(join(tmpdir(), 'gatehouse-audit-reads-')), 'state.db');
  const store = new SqliteStore(path);
  for (let i = 1; i <= 2_000; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, k) => store.appendAudit({ time: new Date(T0 + (i + k) * 1000).toISOString(), callId: `c${i + k}`, runId: `r${i + k}`, subject: 'alice', method: 'tools/call', tool: 'lookup', outcome: 'ok', latencyMs: 1 }, 100)));
  }
  await store.close();
});

/** How SQLite runs the read with these parameters, on the store's own file (its schema and indexes). */
function plan(params: number[]): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare(`EXPLAIN QUERY PLAN ${AUDIT_AFTER_SQL}`).all(...params) as Array<{ detail: string }>).map((p) => p.detail);
  } finally {
    db.close();
  }
}

for (const [name, params] of [
  ['without a window (verify, tail, export)', [0, 0, Number.MAX_SAFE_INTEGER, 1000]],
  ['with a wide window (export --since long ago)', [0, T0 - 86_400_000, Number.MAX_SAFE_INTEGER, 1000]],
  ['with a narrow window', [0, T0 + 500_000, T0 + 600_000, 1000]],
] as const) {
  test(`a page is read along the primary key, in seq order, without sorting the log: ${name}`, () => {
    const details = plan([...params]);
    assert.ok(details.some((d) => /USING INTEGER PRIMARY KEY/.test(d)), details.join('; '));
    assert.ok(!details.some((d) => /TEMP B-TREE/.test(d)), details.join('; '));
  });
}

test('the window still filters, in seq order', async () => {
  const store = new SqliteStore(path);
  try {
    const page = await store.readAudit({ afterSeq: 100, since: T0 + 500_000, until: T0 + 509_000, limit: 1000 });
    assert.deepEqual(page.map((r) => r.seq), Array.from({ length: 10 }, (_, i) => 500 + i));
    assert.deepEqual((await store.readAudit({ afterSeq: 1_995, limit: 1000 })).map((r) => r.seq), [1996, 1997, 1998, 1999, 2000]);
  } finally {
    await store.close();
  }
});
