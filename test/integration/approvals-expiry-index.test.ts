// The expiry sweep (README §Approvals and tool pinning: an approval whose deadline passes unused is recorded
// `expired` even if its caller never calls again) reads the approvals past their deadline through the
// store's index ordered by deadline, not every document under `{approvals}`: each replica once read and
// parsed the whole store (every approval of the last week, every binding pointer, continuation and pin)
// once a minute. It must record the same expiries as before (pending ones and approved unused ones, once
// each, not rejected ones), those stored before the index existed included. Both real stores.

import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApprovalBook } from '../../src/approvals/book.js';
import type { Approval } from '../../src/approvals/approval.js';
import { principalKey } from '../../src/pipeline/principal.js';
import type { Store } from '../../src/store/store.js';
import { onBothStores } from '../helpers/both-stores.js';
import { callsUnder, indexedBook, principal, storePins, type IndexedBook } from '../helpers/indexed-approvals.js';

const DEADLINE_MS = 600_000;
const callOf = callsUnder(DEADLINE_MS);

onBothStores({ tmpPrefix: 'gatehouse-expiry-index-', keyPrefix: 'expiry-index:' }, (open, reset) => {
  let store: Store;
  /** Its whole-store lists are counted: the sweep must need none. */
  let ib: IndexedBook;
  let book: ApprovalBook;
  beforeEach(async () => {
    await reset();
    store = open();
    ib = indexedBook(store);
    book = ib.book;
  });

  const decide = (id: string, approve: boolean) => ib.decide(id, approve);
  const expiredRecords = async () => (await store.readAudit({})).filter((r) => r.outcome === 'expired').map((r) => r.approvalId).sort();

  test('the sweep reads only what has expired, and records the same expiries as a full read: pending and approved unused, not rejected', async (t) => {
    t.after(() => store.close());
    const opened: Approval[] = [];
    for (let i = 0; i < 6; i++) {
      const v = await book.forCall(callOf(principal(`c-${i % 3}`), `item-${i}`));
      assert.equal(v.kind, 'pending');
      opened.push(v.approval);
    }
    assert.equal((await decide(opened[0]!.id, false)).ok, true);
    assert.equal((await decide(opened[1]!.id, true)).ok, true);
    await storePins(store, 'tool', 30, DEADLINE_MS);
    // As an older Gatehouse stored it (no index entry), then indexed by the start-up reindex (one whole read, once).
    const old = { ...opened[2]!, id: 'ap_000000000000000000000001', binding: 'b1' };
    await store.putApproval(old.id, JSON.stringify(old), DEADLINE_MS * 2);
    assert.equal(await book.reindex(), 7);
    ib.listed = 0;

    // Nothing has expired yet: the sweep records nothing, and reads nothing whole.
    assert.equal(await book.recordExpiries(), 0);
    assert.equal(ib.listed, 0, 'a sweep with nothing expired read no whole store');
    assert.deepEqual(await store.expiredApprovals(ib.clock), [], 'the index has nothing past its deadline yet');

    ib.clock += DEADLINE_MS + 1_000;
    const due = [...opened.slice(1).map((a) => a.id), old.id].sort();
    assert.deepEqual((await store.expiredApprovals(ib.clock)).map((d) => (JSON.parse(d) as Approval).id).sort(), due, 'the index gives exactly the approvals past their deadline that may still be pending or unused');
    assert.equal(await book.recordExpiries(), due.length);
    assert.deepEqual(await expiredRecords(), due, 'each recorded once; the rejected one is not');
    assert.equal(ib.listed, 0, 'the sweep read no whole store');
    // Recorded expired, they leave the index: the next sweep reads nothing and records nothing more.
    assert.deepEqual(await store.expiredApprovals(ib.clock), []);
    assert.equal(await book.recordExpiries(), 0);
    assert.deepEqual(await expiredRecords(), due);
    for (const id of due) assert.equal((await book.get(id))?.state, 'expired');
    assert.equal((await book.get(opened[0]!.id))?.state, 'rejected');
  });

  test('the sweep still indexes approvals opened lately by an older replica, and records their expiry, without a whole read', async (t) => {
    t.after(() => store.close());
    const first = await book.forCall(callOf(principal('mid'), 'mid-0'));
    assert.equal(first.kind, 'pending');
    // Opened by an older replica after this one started (and reindexed): the document alone, its deadline passed.
    const late = { ...first.approval, id: 'ap_000000000000000000000003', binding: 'b3', createdAt: ib.clock - 1_000, expiresAt: ib.clock - 500 };
    await store.putApproval(late.id, JSON.stringify(late), DEADLINE_MS);
    assert.equal(await book.recordExpiries({ indexOpenedSince: ib.clock - 300_000 }), 1);
    assert.deepEqual(await expiredRecords(), [late.id]);
    assert.ok((await store.listApprovalPage(undefined, 10)).items.some((i) => i.doc.includes(late.id)), 'and listed for reviewers');
    assert.equal(ib.listed, 0, 'the sweep read no whole store');
  });

  test('an index entry from a stale read (a reindex racing a decision) does not put a decided approval back in the sweep', async (t) => {
    t.after(() => store.close());
    const v = await book.forCall(callOf(principal('race'), 'race-0'));
    assert.equal(v.kind, 'pending');
    const stale = (await store.getApproval(v.approval.id))!;
    assert.equal((await decide(v.approval.id, false)).ok, true);
    const a = JSON.parse(stale) as Approval;
    await store.indexApproval(a.id, { caller: principalKey(a.caller), createdAt: a.createdAt, pendingUntil: a.expiresAt, liveUntil: a.expiresAt }, DEADLINE_MS * 2, stale);
    assert.deepEqual(await store.expiredApprovals(a.expiresAt + 1_000), []);
  });
});
