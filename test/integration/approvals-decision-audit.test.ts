// A reviewer's decision takes effect only once its audit record is written, on either store (SQLite and a
// real Redis), with the store failing on purpose at each step of ApprovalBook.decide: the audit append, then
// the save putting the approval back to pending; the save of the audited decision; the mark on its slot.
// Until 4 December a decision was saved in effect and then recorded: a record that failed, and then the
// save putting it back, left the decision in effect (the approved call ran) with no record of it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { ApprovalBook, type ApprovalStore, type CallToApprove } from '../../src/approvals/book.js';
import type { Approval } from '../../src/approvals/approval.js';
import { compileApprovalRules } from '../../src/approvals/rules.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { approvalStoreOver } from '../helpers/approval-store.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
const stores: Store[] = [];
before(async () => {
  redis = await startRedis();
});
after(async () => {
  for (const s of stores) await s.close();
  await redis.stop();
});

const kinds: Array<{ kind: 'sqlite' | 'redis'; open(): Store }> = [
  { kind: 'sqlite', open: () => openStore({ kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-decision-audit-')), 'state.db') }) },
  { kind: 'redis', open: () => openStore({ kind: 'redis', url: redis.url, keyPrefix: `decision-audit-${randomUUID()}:`, commandTimeoutMs: 2_000 }) },
];

/** Which writes fail next (each once, or while set). */
interface Faults {
  audit: boolean;
  /** Saves of a pending approval (the decider putting it back). */
  savePending: boolean;
  /** Saves of a decision in effect (not marked unaudited). */
  saveDecided: boolean;
  complete: boolean;
}

function failingStore(s: Store, faults: Faults): ApprovalStore {
  const down = () => Promise.reject(new Error('store unavailable'));
  return {
    ...approvalStoreOver(s),
    put: (id, doc, ttlMs, index) => {
      const a = JSON.parse(doc) as Approval;
      if (faults.savePending && a.state === 'pending') return down();
      if (faults.saveDecided && a.state !== 'pending' && a.unaudited !== true) return down();
      return s.putApproval(id, doc, ttlMs, index);
    },
    complete: (key, owner, response, ttlMs) => (faults.complete ? down() : s.completeIdempotency(key, owner, response, ttlMs)),
    audit: (entry) => (faults.audit ? down() : s.appendAudit(entry)),
  };
}

const rule = compileApprovalRules([{ id: 'r', by: 'reviewer', reviewers: { subjects: [], groups: [] }, deadlineSeconds: 600, reuse: 1 }])[0]!;
function callOf(): CallToApprove {
  return {
    callId: randomUUID(),
    principal: { subject: 'key:alice', scopes: [], groups: [], via: 'api_key', keyId: 'alice' },
    route: { kind: 'tools', ref: 'up/record', publicName: 'record', original: 'record', upstream: 'up', listed: true, params: [] },
    args: { item: randomUUID() },
    rule,
    policyVersion: 'v1',
  };
}
const decision = (by: string, approve = true) => ({ approve, by, policyVersion: 'v1', requestId: randomUUID(), mayDecide: () => true });

for (const { kind, open } of kinds) {
  describe(`decisions are audited before they take effect (${kind})`, () => {
    function setup() {
      const s = open();
      stores.push(s);
      const faults: Faults = { audit: false, savePending: false, saveDecided: false, complete: false };
      const clock = { now: Date.now() };
      const decided: string[] = [];
      const book = new ApprovalBook(failingStore(s, faults), { decided: (d) => decided.push(d) }, () => clock.now);
      const decisionsOf = async (id: string) => (await s.readAudit({ limit: 100_000 })).filter((r) => r.approvalId === id && r.outcome !== 'proposed').map((r) => `${r.outcome} by ${r.reviewer}`);
      const stored = async (id: string) => JSON.parse((await s.getApproval(id)) ?? 'null') as Approval | null;
      return { book, faults, clock, decided, decisionsOf, stored };
    }
    async function opened(book: ApprovalBook, c: CallToApprove): Promise<Approval> {
      const v = await book.forCall(c);
      assert.equal(v.kind, 'pending');
      return v.approval;
    }

    it('the audit append fails and so does putting the approval back: the decision is not in effect, and after its slot\'s lease the next reviewer decides', async () => {
      const { book, faults, clock, decided, decisionsOf } = setup();
      const c = callOf();
      const a = await opened(book, c);
      faults.audit = true;
      faults.savePending = true;
      await assert.rejects(book.decide(a.id, decision('reviewer-1')), /store unavailable/);
      faults.audit = false;
      faults.savePending = false;
      assert.equal((await book.get(a.id))?.state, 'pending');
      assert.equal((await book.get(a.id))?.decision, undefined);
      assert.equal((await book.list()).find((x) => x.id === a.id)?.state, 'pending');
      const v = await book.forCall({ ...c, callId: randomUUID() });
      assert.equal(v.kind, 'pending', 'the approved call does not run on a decision no record shows');
      assert.deepEqual(await decisionsOf(a.id), []);
      assert.deepEqual(decided, []);
      // Its decider may still be at work within the slot's lease; past it, the approval is decided anew. The
      // lease was set by the store's real clock when the slot was claimed, after this clock was read: two
      // minutes (not the lease's 60 s and a second) leave room for a slow machine between the two, and stay
      // well within the approval's 600 s deadline.
      clock.now += 120_000;
      const r = await book.decide(a.id, decision('reviewer-2', false));
      assert.equal(r.ok, true, JSON.stringify(r));
      assert.equal((await book.get(a.id))?.state, 'rejected');
      assert.deepEqual(await decisionsOf(a.id), ['rejected by reviewer-2']);
      assert.deepEqual(decided, ['rejected']);
    });

    it('the audit record is written and the save of the decision fails: it stands (its slot says so), and readers save it', async () => {
      const { book, faults, decided, decisionsOf, stored } = setup();
      const c = callOf();
      const a = await opened(book, c);
      faults.saveDecided = true;
      const r = await book.decide(a.id, decision('reviewer-1'));
      faults.saveDecided = false;
      assert.equal(r.ok, true, JSON.stringify(r));
      assert.deepEqual(decided, ['approved']);
      assert.deepEqual(await decisionsOf(a.id), ['approved by reviewer-1']);
      assert.equal((await stored(a.id))?.unaudited, true, 'saved marked unaudited only');
      assert.equal((await book.get(a.id))?.state, 'approved');
      assert.equal((await stored(a.id))?.unaudited, undefined, 'the reader saved it in effect');
      assert.equal((await book.forCall({ ...c, callId: randomUUID() })).kind, 'run');
      // Once read, it is saved in effect; no one decides it again.
      const second = await book.decide(a.id, decision('reviewer-2', false));
      assert.equal(!second.ok && second.problem, 'not_pending');
      assert.deepEqual(await decisionsOf(a.id), ['approved by reviewer-1']);
    });

    it('the audit record is written and the mark on its slot fails: the decision saved in effect stands', async () => {
      const { book, faults, decisionsOf } = setup();
      const c = callOf();
      const a = await opened(book, c);
      faults.complete = true;
      const r = await book.decide(a.id, decision('reviewer-1'));
      faults.complete = false;
      assert.equal(r.ok, true, JSON.stringify(r));
      assert.equal((await book.get(a.id))?.state, 'approved');
      assert.equal((await book.forCall({ ...c, callId: randomUUID() })).kind, 'run');
      assert.deepEqual(await decisionsOf(a.id), ['approved by reviewer-1']);
    });

    it('the audit append fails: nothing stands, nothing is recorded, and the next attempt decides at once', async () => {
      const { book, faults, decisionsOf } = setup();
      const a = await opened(book, callOf());
      faults.audit = true;
      await assert.rejects(book.decide(a.id, decision('reviewer-1')), /store unavailable/);
      faults.audit = false;
      assert.equal((await book.get(a.id))?.state, 'pending');
      assert.equal((await book.decide(a.id, decision('reviewer-2'))).ok, true);
      assert.deepEqual(await decisionsOf(a.id), ['approved by reviewer-2']);
    });
  });
}
