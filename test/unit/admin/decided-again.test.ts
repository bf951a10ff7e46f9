// Deciding an approval that is already decided (src/admin/server.ts): 409 not_pending, saying what it was
// decided as and by whom. It said only "This approval is already decided", so a reviewer whose approve was
// sent again (a retry after a lost answer, a double click, a script run twice) could not tell whether their
// approval stood or another reviewer had rejected the call: the same 409 either way. The state is said only
// to a reviewer who may decide the approval: one outside its rule's reviewers is refused 404 not_found, as on
// a pending one and as for an id that does not exist (until 5 December, 409 not_pending, which told them it
// was decided, and later 403 forbidden).
import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { ReviewerAuth } from '../../../src/admin/reviewer-auth.js';
import type { Approval } from '../../../src/approvals/approval.js';
import { adminOverBook, pendingApproval as pendingIn, postDecision } from '../../helpers/admin-decisions.js';

const TOKEN = 'admin-token-for-decided-again-tests';
/** Stands in for the OAuth verification of the reviewers' access tokens: the bearer is the subject, of group ops. */
const verify = async (headers: IncomingHttpHeaders) => ({ ok: true as const, principal: { subject: String(headers.authorization).slice('Bearer '.length), scopes: [], groups: ['ops'], via: 'jwt' as const } });

const admin = adminOverBook('gatehouse-admin-again-', () => new ReviewerAuth(TOKEN, ['ops'], verify));

const pendingApproval = (reviewers: string[] = []): Promise<Approval> => pendingIn(admin.book, reviewers);

async function decide(id: string, verdict: 'approve' | 'reject', bearer = TOKEN): Promise<{ status: number; error?: { code: string; message: string; state?: string } }> {
  const { status, body } = await postDecision<{ error?: { code: string; message: string; state?: string } }>(admin.url, id, verdict, bearer);
  return { status, ...(body.error ? { error: body.error } : {}) };
}

it('approving again, or rejecting after an approval, is 409 not_pending naming the decision that stands', async () => {
  const a = await pendingApproval();
  assert.equal((await decide(a.id, 'approve')).status, 200);
  for (const verdict of ['approve', 'reject'] as const) {
    const again = await decide(a.id, verdict);
    assert.equal(again.status, 409);
    assert.equal(again.error?.code, 'not_pending');
    assert.equal(again.error?.state, 'approved');
    assert.match(again.error!.message, /already approved by admin-token/);
  }
});

it('approving after a rejection is 409 naming the rejection', async () => {
  const a = await pendingApproval();
  assert.equal((await decide(a.id, 'reject', 'bob')).status, 200);
  const late = await decide(a.id, 'approve');
  assert.equal(late.status, 409);
  assert.equal(late.error?.state, 'rejected');
  assert.match(late.error!.message, /already rejected by bob/);
});

it('a reviewer outside the rule learns nothing of the decision: 404 not_found, as on a pending approval', async () => {
  const a = await pendingApproval(['carol']);
  const whilePending = await decide(a.id, 'reject', 'bob');
  assert.equal((await decide(a.id, 'approve', 'carol')).status, 200);
  const outsider = await decide(a.id, 'reject', 'bob');
  assert.equal(outsider.status, 404);
  assert.deepEqual(outsider, whilePending);
  assert.equal(outsider.error?.code, 'not_found');
  assert.equal(outsider.error?.state, undefined);
  assert.doesNotMatch(outsider.error!.message, /carol|approved/);
});
