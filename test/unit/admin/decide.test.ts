// The admin API's approve/reject on a store that fails on purpose (src/admin/server.ts over ApprovalBook.decide):
// a decision the store could not save is answered 503 and leaves no record of a decision; of two concurrent
// decisions one is answered 200, the other 409; the audit holds exactly the decision that took effect.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createAdminListener, type AdminListener } from '../../../src/admin/server.js';
import { ReviewerAuth } from '../../../src/admin/reviewer-auth.js';
import { ApprovalBook, type ApprovalStore } from '../../../src/approvals/book.js';
import type { Approval } from '../../../src/approvals/approval.js';
import { compileApprovalRules } from '../../../src/approvals/rules.js';
import { createLogger } from '../../../src/log/logger.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';
import { approvalStoreOver } from '../../helpers/approval-store.js';

const TOKEN = 'admin-token-for-decide-tests';
const POLICY = 'policy-1';

let store: SqliteStore;
let admin: AdminListener;
let url: string;
/** How many saves of a decided approval fail next. */
let failSaves = 0;
let book: ApprovalBook;

before(async () => {
  store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'gatehouse-admin-decide-')), 'gatehouse.db'));
  const s = store;
  const approvals: ApprovalStore = {
    ...approvalStoreOver(s),
    put: (id, doc, ttlMs, index) => {
      if (failSaves > 0 && (JSON.parse(doc) as Approval).state !== 'pending') {
        failSaves--;
        return Promise.reject(new Error('store unavailable'));
      }
      return s.putApproval(id, doc, ttlMs, index);
    },
  };
  book = new ApprovalBook(approvals);
  admin = createAdminListener({ book, policyVersion: () => POLICY, auth: new ReviewerAuth(TOKEN, [], undefined), log: createLogger('error', () => {}) });
  url = await admin.listen('127.0.0.1', 0);
});
after(async () => {
  await admin.close();
  await store.close();
});

const rule = compileApprovalRules([{ id: 'r', by: 'reviewer', reviewers: { subjects: [], groups: [] }, deadlineSeconds: 600, reuse: 1 }])[0]!;

async function pendingApproval(): Promise<Approval> {
  const v = await book.forCall({
    callId: randomUUID(),
    principal: { subject: 'key:alice', scopes: [], groups: [], via: 'api_key', keyId: 'alice' },
    route: { kind: 'tools', ref: 'up/record', publicName: 'record', original: 'record', upstream: 'up', listed: true, params: [] },
    args: { item: randomUUID() },
    rule,
    policyVersion: POLICY,
  });
  assert.equal(v.kind, 'pending');
  return v.approval;
}

async function decide(id: string, verdict: 'approve' | 'reject'): Promise<{ status: number; body: { error?: { code: string }; approval?: Approval } }> {
  const res = await fetch(`${url}/approvals/${id}/${verdict}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: '{}' });
  return { status: res.status, body: (await res.json()) as { error?: { code: string }; approval?: Approval } };
}

async function decisionsOf(id: string): Promise<string[]> {
  return (await store.readAudit({ limit: 100_000 })).filter((r) => r.approvalId === id && r.outcome !== 'proposed').map((r) => `${r.outcome} by ${r.reviewer}`);
}

describe('admin API decisions on a failing store', () => {
  it('a decision the store cannot save is answered 503 and not recorded; the approval stays pending and can be decided', async () => {
    const a = await pendingApproval();
    failSaves = 1;
    const failed = await decide(a.id, 'approve');
    assert.equal(failed.status, 503);
    assert.equal(failed.body.error?.code, 'unavailable');
    assert.deepEqual(await decisionsOf(a.id), [], 'the audit names no decision that did not take effect');
    assert.equal((await book.get(a.id))?.state, 'pending');
    const rejected = await decide(a.id, 'reject');
    assert.equal(rejected.status, 200);
    assert.equal(rejected.body.approval?.state, 'rejected');
    assert.deepEqual(await decisionsOf(a.id), ['rejected by admin-token']);
  });

  it('two concurrent decisions: one 200, one 409, and the audit holds the one that took effect', async () => {
    const a = await pendingApproval();
    const answers = await Promise.all([decide(a.id, 'approve'), decide(a.id, 'reject')]);
    assert.deepEqual(answers.map((x) => x.status).sort(), [200, 409]);
    const won = answers.find((x) => x.status === 200)!.body.approval!;
    assert.equal(answers.find((x) => x.status === 409)!.body.error?.code, 'not_pending');
    assert.equal((await book.get(a.id))?.state, won.state);
    assert.deepEqual(await decisionsOf(a.id), [`${won.state} by admin-token`]);
  });
});
