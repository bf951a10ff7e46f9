// AuditQuery.maxBytes, on both stores: a page of the audit log stops once its records hold that much
// stored text (at least one record), so `gatehouse audit` holds a bounded page whatever the size of the
// records (each holds a call's arguments, up to listen.maxBodyBytes). A walk that reads on until an empty
// page still gets every record once, in order, with a time window or without.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AuditQuery, AuditRecord, Store } from '../../src/store/store.js';
import { onBothStores } from '../helpers/both-stores.js';

const RECORDS = 40;
const BLOB = 'x'.repeat(100 * 1024);
const MAX = 1024 * 1024;
const T0 = Date.parse('2026-11-01T00:00:00Z');

async function fill(store: Store): Promise<void> {
  for (let i = 1; i <= RECORDS; i++) await store.appendAudit({ time: new Date(T0 + i * 1000).toISOString(), callId: `c${i}`, runId: `r${i}`, subject: 'alice', method: 'tools/call', tool: 'upload', arguments: { blob: BLOB }, outcome: 'ok', latencyMs: 1 });
}

async function walk(store: Store, window: Pick<AuditQuery, 'since' | 'until'>): Promise<{ seqs: number[]; largest: number }> {
  const seqs: number[] = [];
  let largest = 0;
  for (let afterSeq = 0, reads = 0; reads < 100; reads++) {
    const page: AuditRecord[] = await store.readAudit({ afterSeq, limit: 1000, maxBytes: MAX, ...window });
    if (page.length === 0) return { seqs, largest };
    largest = Math.max(largest, page.length);
    seqs.push(...page.map((r) => r.seq));
    afterSeq = page.at(-1)!.seq;
  }
  throw new Error('the walk did not end');
}

function contract(open: () => Store, reset: () => Promise<void>): void {
  test('a page stops at maxBytes of stored text, and a walk to an empty page gets every record once', async () => {
    await reset();
    const store = open();
    try {
      await fill(store);
      const first = await store.readAudit({ limit: 1000, maxBytes: MAX });
      const text = first.reduce((n, r) => n + JSON.stringify(r).length, 0);
      assert.ok(first.length >= 1 && first.length < RECORDS, `${first.length} records`);
      assert.ok(text >= MAX && text - JSON.stringify(first.at(-1)).length < MAX, `${text} characters: no more than one record past the bound`);
      const all = await walk(store, {});
      assert.deepEqual(all.seqs, Array.from({ length: RECORDS }, (_, i) => i + 1));
      assert.ok(all.largest < RECORDS);
      const windowed = await walk(store, { since: T0 + 5_000, until: T0 + 34_000 });
      assert.deepEqual(windowed.seqs, Array.from({ length: 30 }, (_, i) => i + 5));
      assert.equal((await store.readAudit({ limit: 1000, maxBytes: 1 })).length, 1, 'at least one record');
    } finally {
      await store.close();
    }
  });
}

onBothStores({ tmpPrefix: 'gatehouse-page-bytes-', keyPrefix: 'bytes:' }, contract);
