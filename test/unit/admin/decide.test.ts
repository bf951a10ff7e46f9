// The admin API's approve/reject on a store that fails on purpose (src/admin/server.ts over ApprovalBook.decide):
// a decision the store could not save is answered 503 and leaves no record of a decision; of two concurrent
// decisions one is answered 200, the other 409; the audit holds exactly the decision that took effect.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ReviewerAuth } from '../../../src/admin/reviewer-auth.js';
import type { Approval } from '../../../src/approvals/approval.js';
import { adminOverBook, pendingApproval as pendingIn, postDecision } from '../../helpers/admin-decisions.js';
import { approvalStoreOver } from '../../helpers/approval-store.js';

const TOKEN = 'admin-token-for-decide-tests';

/** How many saves of a decided approval fail next. */
let failSaves = 0;

const admin = adminOverBook('gatehouse-admin-decide-', () => new ReviewerAuth(TOKEN, [], undefined), (s) => ({
  ...approvalStoreOver(s),
  put: (id, doc, ttlMs, index) => {
    if (failSaves > 0 && (JSON.parse(doc) as Approval).state !== 'pending') {
      failSaves--;
      return Promise.reject(new Error('store unavailable'));
    }
    return s.putApproval(id, doc, ttlMs, index);
  },
}));

const pendingApproval = (): Promise<Approval> => pendingIn(admin.book);

function decide(id: string, verdict: 'approve' | 'reject'): Promise<{ status: number; body: { error?: { code: string }; approval?: Approval } }> {
  return postDecision(admin.url, id, verdict, TOKEN);
}

async function decisionsOf(id: string): Promise<string[]> {
  return (await admin.store.readAudit({ limit: 100_000 })).filter((r) => r.approvalId === id && r.outcome !== 'proposed').map((r) => `${r.outcome} by ${r.reviewer}`);
}

describe('admin API decisions on a failing store', () => {
  it('a decision the store cannot save is answered 503 and not recorded; the approval stays pending and can be decided', async () => {
    const a = await pendingApproval();
    failSaves = 1;
    const failed = await decide(a.id, 'approve');
    assert.equal(failed.status, 503);
    assert.equal(failed.body.error?.code, 'unavailable');
    assert.deepEqual(await decisionsOf(a.id), [], 'the audit names no decision that did not take effect');
    assert.equal((await admin.book.get(a.id))?.state, 'pending');
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
    assert.equal((await admin.book.get(a.id))?.state, won.state);
    assert.deepEqual(await decisionsOf(a.id), [`${won.state} by admin-token`]);
  });
});
