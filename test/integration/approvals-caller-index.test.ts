// Counting a caller's pending approvals (approvals.maxPendingPerCaller, README §Approvals and tool pinning:
// "Bounded per caller") reads that caller's approvals through the store's index, not every document under
// `{approvals}`: each call that needed a new approval once listed the whole store (every approval of every
// caller, kept a week past its deadline, every binding pointer, continuation and pin), O(n) per call. The
// index must give the same count as reading everything, and follow decisions and expiries. Both real stores.

import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApprovalBook } from '../../src/approvals/book.js';
import { effectiveState, type Approval } from '../../src/approvals/approval.js';
import type { Principal } from '../../src/pipeline/principal.js';
import { principalKey } from '../../src/pipeline/principal.js';
import type { Store } from '../../src/store/store.js';
import { onBothStores } from '../helpers/both-stores.js';
import { callsUnder, indexedBook, principal, storePins, V1, type IndexedBook } from '../helpers/indexed-approvals.js';

const callOf = callsUnder(600_000);
const alice = principal('alice');
const bob = principal('bob');
const MAX = 3;

onBothStores({ tmpPrefix: 'gatehouse-caller-index-', keyPrefix: 'caller-index:' }, (open, reset) => {
  let store: Store;
  /** Its whole-store lists are counted: opening an approval must need none. */
  let ib: IndexedBook;
  let book: ApprovalBook;
  beforeEach(async () => {
    await reset();
    store = open();
    ib = indexedBook(store);
    book = ib.book;
  });

  /** What reading every document says: the caller's approvals pending now under V1. */
  async function pendingByScan(p: Principal): Promise<Approval[]> {
    const all = (await store.listApprovals()).map((d) => JSON.parse(d) as Approval).filter((a) => typeof a.id === 'string' && a.id.startsWith('ap_'));
    return all.filter((a) => principalKey(a.caller) === principalKey(p) && a.policyVersion === V1 && effectiveState(a, ib.clock) === 'pending');
  }

  test('the limit per caller is counted from the caller index: the same count as a full read, and no full read', async (t) => {
    t.after(() => store.close());
    // Other callers' approvals and other documents fill the store; none of them counts for alice.
    for (let i = 0; i < 40; i++) assert.equal((await book.forCall(callOf(principal(`other-${i}`), 'x'), { maxPending: MAX })).kind, 'pending');
    await storePins(store, 'tool', 20, 600_000);
    for (let i = 0; i < MAX; i++) assert.equal((await book.forCall(callOf(alice, `a-${i}`), { maxPending: MAX })).kind, 'pending');
    assert.equal((await book.forCall(callOf(bob, 'b-0'), { maxPending: MAX })).kind, 'pending');
    const refused = await book.forCall(callOf(alice, 'a-over'), { maxPending: MAX });
    assert.deepEqual(refused, { kind: 'limited', limit: MAX, pending: MAX });
    // A repeat of a pending call finds its approval, as before.
    assert.equal((await book.forCall(callOf(alice, 'a-0'), { maxPending: MAX })).kind, 'pending');
    assert.equal(ib.listed, 0, 'no opening listed the whole store');
    assert.equal((await pendingByScan(alice)).length, MAX);
    assert.equal((await pendingByScan(bob)).length, 1);
    assert.deepEqual((await store.pendingApprovalsOf(principalKey(alice))).map((d) => (JSON.parse(d) as Approval).id).sort(), (await pendingByScan(alice)).map((a) => a.id).sort());
    assert.deepEqual((await store.pendingApprovalsOf(principalKey(principal('nobody')))), []);
  });

  test('a decision takes the approval out of its caller\'s index; an expiry does too', async (t) => {
    t.after(() => store.close());
    const opened: Approval[] = [];
    for (let i = 0; i < MAX; i++) {
      const v = await book.forCall(callOf(alice, `d-${i}`), { maxPending: MAX });
      assert.equal(v.kind, 'pending');
      opened.push(v.approval);
    }
    assert.equal((await book.forCall(callOf(alice, 'd-over'), { maxPending: MAX })).kind, 'limited');
    const ids = async () => (await store.pendingApprovalsOf(principalKey(alice))).map((d) => (JSON.parse(d) as Approval).id).sort();

    // Rejected: out of the index, and room for one more.
    const rejected = await ib.decide(opened[0]!.id, false);
    assert.equal(rejected.ok, true);
    assert.deepEqual(await ids(), [opened[1]!.id, opened[2]!.id].sort());
    // Approved: not pending either.
    assert.equal((await ib.decide(opened[1]!.id, true)).ok, true);
    assert.deepEqual(await ids(), [opened[2]!.id]);
    const next = await book.forCall(callOf(alice, 'd-next'), { maxPending: MAX });
    assert.equal(next.kind, 'pending');
    assert.equal((await pendingByScan(alice)).length, 2);

    // Past the deadline none is pending: the count is 0 at once (the book judges each by its deadline), and
    // the sweep that records the expiries takes them out of the index.
    ib.clock += 601_000;
    assert.equal((await pendingByScan(alice)).length, 0);
    const after = await book.forCall(callOf(alice, 'd-after-deadline'), { maxPending: 1 });
    assert.equal(after.kind, 'pending', 'nothing past its deadline counts');
    ib.clock += 601_000;
    assert.ok((await book.recordExpiries()) >= 3);
    assert.deepEqual(await ids(), []);
    assert.equal(ib.listed, 0, 'nothing listed the whole store, the sweep included (it reads the index by deadline: approvals-expiry-index.test.ts)');
  });

  test('approvals stored before the index existed are indexed by reindex: counted and listed', async (t) => {
    t.after(() => store.close());
    // As an older Gatehouse stored them: the document alone.
    const first = await book.forCall(callOf(alice, 'old-0'), { maxPending: MAX });
    assert.equal(first.kind, 'pending');
    const old = first.approval;
    await store.putApproval('ap_000000000000000000000001', JSON.stringify({ ...old, id: 'ap_000000000000000000000001', binding: 'b1' }), 600_000);
    await store.putApproval('ap_000000000000000000000002', JSON.stringify({ ...old, id: 'ap_000000000000000000000002', binding: 'b2' }), 600_000);
    assert.equal((await store.pendingApprovalsOf(principalKey(alice))).length, 1, 'only the one stored with its entry');
    assert.equal((await book.reindex()), 3);
    assert.equal((await store.pendingApprovalsOf(principalKey(alice))).length, 3);
    assert.deepEqual(await book.forCall(callOf(alice, 'old-over'), { maxPending: MAX }), { kind: 'limited', limit: MAX, pending: MAX });
    // A later write's entry is newer than the document reindex read, and is kept: decided stays decided.
    const stale = (await store.getApproval('ap_000000000000000000000001'))!;
    assert.equal((await ib.decide('ap_000000000000000000000001', false)).ok, true);
    await store.indexApproval('ap_000000000000000000000001', { caller: principalKey(alice), createdAt: old.createdAt, pendingUntil: (JSON.parse(stale) as Approval).expiresAt, liveUntil: (JSON.parse(stale) as Approval).expiresAt }, 600_000);
    assert.equal((await store.pendingApprovalsOf(principalKey(alice))).length, 2);
  });

  test('the pending gauge is counted from the index: the same as a full read, following decisions and deadlines, with no full read', async (t) => {
    t.after(() => store.close());
    const opened: Approval[] = [];
    for (let i = 0; i < 12; i++) {
      const v = await book.forCall(callOf(principal(`gauge-${i % 4}`), `g-${i}`), { maxPending: MAX });
      assert.equal(v.kind, 'pending');
      opened.push(v.approval);
    }
    await storePins(store, 'gauge', 30, 600_000);
    const scanned = async () => (await store.listApprovals()).map((d) => JSON.parse(d) as Approval).filter((a) => typeof a.id === 'string' && a.id.startsWith('ap_') && effectiveState(a, Date.now()) === 'pending').length;
    assert.equal(await book.pendingCount(), 12);
    assert.equal(await book.pendingCount(), await scanned());
    for (const a of opened.slice(0, 3)) assert.equal((await ib.decide(a.id, a.id === opened[0]!.id)).ok, true);
    assert.equal(await book.pendingCount(), 9);
    // One whose deadline is a moment away (as stored with its entry): not counted once it has passed.
    const soon = { ...opened[3]!, id: 'ap_000000000000000000000005', binding: 'b5', expiresAt: Date.now() + 300 };
    await store.putApproval(soon.id, JSON.stringify(soon), 600_000, { caller: principalKey(alice), createdAt: soon.createdAt, pendingUntil: soon.expiresAt, liveUntil: soon.expiresAt });
    assert.equal(await book.pendingCount(), 10);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(await book.pendingCount(), 9);
    assert.equal(await book.pendingCount(), await scanned());
    assert.equal(ib.listed, 0, 'the gauge read no whole store');
  });

  test('the sweep indexes approvals opened lately without an entry (a replica still on an older version, mid-upgrade)', async (t) => {
    t.after(() => store.close());
    const first = await book.forCall(callOf(bob, 'mid-0'), { maxPending: MAX });
    assert.equal(first.kind, 'pending');
    // Opened by an older replica after this one started (and reindexed): the document alone.
    const late = { ...first.approval, id: 'ap_000000000000000000000003', binding: 'b3', createdAt: ib.clock };
    const early = { ...first.approval, id: 'ap_000000000000000000000004', binding: 'b4', createdAt: ib.clock - 3_600_000 };
    for (const a of [late, early]) await store.putApproval(a.id, JSON.stringify(a), 600_000);
    assert.equal((await store.pendingApprovalsOf(principalKey(bob))).length, 1);
    assert.equal(await book.recordExpiries({ indexOpenedSince: ib.clock - 600_000 }), 0);
    const ids = (await store.pendingApprovalsOf(principalKey(bob))).map((d) => (JSON.parse(d) as Approval).id).sort();
    assert.deepEqual(ids, [first.approval.id, late.id].sort(), 'the one opened lately is indexed; the older one is left to the start-up reindex');
    assert.ok((await store.listApprovalPage(undefined, 10)).items.some((i) => i.doc.includes(late.id)), 'and listed for reviewers');
  });
});
