// The start-up reindex of approvals and pins (README §Approvals and tool pinning: approvals and pins stored
// by an older Gatehouse are indexed once per start) reads the store a slice at a time: it once read every
// document under `{approvals}` in one piece (every approval of the last week, every binding pointer,
// continuation and pin), twice at once (approvals and pins), so a replica held the whole store in memory at
// start and, on SQLite, its writer thread answered nothing else while it read it all and the main thread
// stalled copying it over (20,000 approvals: +110 MB, calls waiting 0.2–0.4 s). Both real stores.

import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApprovalBook, type ApprovalStore } from '../../src/approvals/book.js';
import { PinBook, type PinStore } from '../../src/approvals/pins.js';
import { createLogger } from '../../src/log/logger.js';
import { principalKey } from '../../src/pipeline/principal.js';
import type { Store } from '../../src/store/store.js';
import { approvalStoreOver } from '../helpers/approval-store.js';
import { onBothStores } from '../helpers/both-stores.js';
import { pinStoreOver } from '../helpers/pin-store.js';

const APPROVALS = 1_300;
const PINS = 40;
const TTL = 3_600_000;

onBothStores({ tmpPrefix: 'gatehouse-reindex-slices-', keyPrefix: 'reindex-slices:' }, (open, reset) => {
  let store: Store;
  beforeEach(async () => {
    await reset();
    store = open();
  });

  test('reindex reads the store in bounded slices, never whole, and still indexes every approval and pin stored without an entry', async (t) => {
    t.after(() => store.close());
    const now = Date.now();
    // As an older Gatehouse stored them: documents alone, approvals, binding pointers and pins mixed.
    const writes: Array<Promise<void>> = [];
    for (let i = 0; i < APPROVALS; i++) {
      const id = `ap_${String(i).padStart(24, '0')}`;
      const approval = { id, binding: `b${i}`, generation: 0, rule: 'r', by: 'reviewer', reviewers: { subjects: [], groups: [] }, reuse: 1, caller: { subject: `key:c${i % 7}`, via: 'api_key', keyId: `c${i % 7}` }, upstream: 'up', toolRef: 'up/t', tool: 't', argumentsSha256: 'a', argumentsDigest: 'a', preview: { i }, previewSha256: 'p', policyVersion: 'v', createdAt: now - i, expiresAt: now + 600_000, state: 'pending' };
      writes.push(store.putApproval(id, JSON.stringify(approval), TTL), store.putApproval(`binding:b${i}`, JSON.stringify({ generation: 0 }), TTL));
      if (writes.length >= 400) await Promise.all(writes.splice(0));
    }
    for (let i = 0; i < PINS; i++) writes.push(store.putApproval(`pin:up/t${i}`, JSON.stringify({ kind: 'pin', ref: `up/t${i}`, pinned: { sha256: 'a'.repeat(64), definition: {}, at: now } }), TTL));
    await Promise.all(writes);

    let largest = 0;
    const slices = async (cursor: string | undefined, count: number) => {
      const page = await store.scanApprovals(cursor, count);
      largest = Math.max(largest, page.docs.length);
      return page;
    };
    const whole = () => Promise.reject(new Error('read the whole store at once'));
    const approvals: ApprovalStore = { ...approvalStoreOver(store), list: whole, scan: slices };
    const pinPort: PinStore = { ...pinStoreOver(store), scan: slices };
    const [approvalsSeen, pinsSeen] = await Promise.all([new ApprovalBook(approvals).reindex(), new PinBook(pinPort, createLogger('error', () => {})).reindex()]);
    assert.equal(approvalsSeen, APPROVALS, 'every approval seen once');
    assert.equal(pinsSeen, PINS, 'every pin seen once');
    assert.ok(largest > 0 && largest <= 1_000, `a slice held ${largest} documents`);
    // Indexed: counted per caller, listed for reviewers, pins in their set.
    let pending = 0;
    for (let c = 0; c < 7; c++) pending += (await store.pendingApprovalsOf(principalKey({ subject: `key:c${c}`, via: 'api_key' }))).length;
    assert.equal(pending, APPROVALS);
    assert.equal(await store.countPendingApprovals(), APPROVALS);
    assert.equal((await store.listPins()).length, PINS);
  });
});
