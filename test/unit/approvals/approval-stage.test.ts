// The approval stage between the budget stage and what comes after it, on a real SQLite approval book: an
// exception thrown after an approved run began is answered as an internal error of the upstream stage,
// not as "the approval cannot be checked" (an approval-stage refusal, which the budget takes for a call
// that did not run, and gives its spend back: one call too few). A store that fails before the run still
// is that refusal, and is given back.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileApprovalStage } from '../../../src/approvals/approval-stage.js';
import { ApprovalBook, type ApprovalStore } from '../../../src/approvals/book.js';
import { compileApprovalRules } from '../../../src/approvals/rules.js';
import { PendingConfirmations } from '../../../src/approvals/user-confirmation.js';
import { createLogger } from '../../../src/log/logger.js';
import { Cancellation } from '../../../src/pipeline/cancellation.js';
import type { CallContext } from '../../../src/pipeline/context.js';
import type { Outcome } from '../../../src/pipeline/outcome.js';
import { compileBudgets, compileBudgetStage } from '../../../src/policy/budget-stage.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';

const VERSION = 'v1';
let store: SqliteStore;
before(() => {
  store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'gatehouse-approval-stage-')), 'gatehouse.db'));
});
after(() => store.close());

function approvalStore(s: SqliteStore, failing: { now: boolean }): ApprovalStore {
  const guard = <T>(p: () => Promise<T>): Promise<T> => (failing.now ? Promise.reject(new Error('store down')) : p());
  return {
    put: (id, doc, ttlMs, index) => guard(() => s.putApproval(id, doc, ttlMs, index)),
    get: (id) => guard(() => s.getApproval(id)),
    list: () => guard(() => s.listApprovals()),
    scan: (cursor, count) => guard(() => s.scanApprovals(cursor, count)),
    index: (id, entry, ttlMs, doc) => guard(() => s.indexApproval(id, entry, ttlMs, doc)),
    expired: (now) => guard(() => s.expiredApprovals(now)),
    unindexedSince: (since) => guard(() => s.unindexedApprovals(since)),
    pendingOf: (caller) => guard(() => s.pendingApprovalsOf(caller)),
    page: (after, limit, pendingOnly) => guard(() => s.listApprovalPage(after, limit, pendingOnly)),
    countPending: () => guard(() => s.countPendingApprovals()),
    claim: (key, digest, owner, leaseMs, ttlMs) => guard(() => s.claimIdempotency(key, digest, owner, leaseMs, ttlMs)),
    read: (key) => guard(() => s.readIdempotency(key)),
    release: (key, owner) => guard(() => s.releaseIdempotency(key, owner)),
    complete: (key, owner, response, ttlMs) => guard(() => s.completeIdempotency(key, owner, response, ttlMs)),
    audit: (entry) => guard(() => s.appendAudit(entry)),
  };
}

let n = 0;
function callContext(item: string): CallContext {
  n++;
  return {
    callId: `call-${n}`,
    edge: {},
    method: 'tools/call',
    kind: 'request',
    era: 'legacy',
    message: { jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'write', arguments: { item } } },
    principal: { subject: 'alice', scopes: [], groups: [], via: 'api_key', keyId: 'alice' },
    route: { kind: 'tools', ref: 'crm/write', publicName: 'write', original: 'write', upstream: 'crm', listed: true, params: [] },
    cancel: new Cancellation(),
    clientCapabilities: {},
    headers: {},
  } as unknown as CallContext;
}

test('an exception after an approved run began keeps the budget spend; a store failure before it gives it back', async () => {
  const failing = { now: false };
  const book = new ApprovalBook(approvalStore(store, failing), { decided: () => {} });
  const log = createLogger('error', () => {});
  const approval = compileApprovalStage(compileApprovalRules([{ id: 'writes', tools: ['crm/write'], by: 'reviewer', reviewers: { subjects: [], groups: [] }, deadlineSeconds: 600, reuse: 1 }]), book, VERSION, { maxPending: 20 }, new PendingConfirmations(), log);
  const refunds: string[] = [];
  const budget = compileBudgetStage(
    compileBudgets([{ id: 'b', per: 'subject', tools: ['*'], window: 'month', limit: 100, cost: 1 }]),
    async () => ({ allowed: true, used: 1, resetsAt: Date.now() + 60_000, resetsInMs: 60_000 }),
    async (key) => void refunds.push(key),
    log,
  );
  const run = (ctx: CallContext, after: () => Promise<Outcome>): Promise<Outcome> => budget.run(ctx, (c) => approval.run(c, after));

  // Ask, approve, then run with a stage after the approval that throws.
  const first = await run(callContext('x'), () => Promise.reject(new Error('not reached')));
  assert.equal(first.kind, 'refused');
  const id = (first as { refusal: { meta: Record<string, string> } }).refusal.meta['dev.gatehouse/approval_id']!;
  assert.equal(refunds.length, 1, 'the pending approval gave its spend back');
  const decided = await book.decide(id, { approve: true, by: 'reviewer', policyVersion: VERSION, requestId: 'r', mayDecide: () => true });
  assert.equal(decided.ok, true);

  const thrown = await run(callContext('x'), () => Promise.reject(new Error('a later stage broke')));
  assert.equal(thrown.kind, 'refused');
  const refused = thrown as { stage?: string; refusal: { kind: string; code: string } };
  assert.equal(refused.stage, 'upstream');
  assert.deepEqual([refused.refusal.kind, refused.refusal.code], ['transport', 'internal_error']);
  assert.equal(refunds.length, 1, 'the approved run may have reached the upstream: its spend stays');

  // The approval book's own failure, before anything ran: refused at the approval stage, spend given back.
  failing.now = true;
  const down = (await run(callContext('y'), () => Promise.reject(new Error('not reached')))) as { stage?: string; refusal: { kind: string; error?: { code: string } } };
  assert.equal(down.stage, 'approval');
  assert.equal(down.refusal.error?.code, 'GW_ERR_STATE_UNAVAILABLE');
  assert.equal(refunds.length, 2);
});
