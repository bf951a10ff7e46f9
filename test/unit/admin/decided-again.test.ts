// Deciding an approval that is already decided (src/admin/server.ts): 409 not_pending, saying what it was
// decided as and by whom. It said only "This approval is already decided", so a reviewer whose approve was
// sent again (a retry after a lost answer, a double click, a script run twice) could not tell whether their
// approval stood or another reviewer had rejected the call: the same 409 either way. The state is said only
// to a reviewer who may see the approval: one outside its rule's reviewers learns nothing more than before.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { createAdminListener, type AdminListener } from '../../../src/admin/server.js';
import { ReviewerAuth } from '../../../src/admin/reviewer-auth.js';
import { ApprovalBook } from '../../../src/approvals/book.js';
import type { Approval } from '../../../src/approvals/approval.js';
import { compileApprovalRules } from '../../../src/approvals/rules.js';
import { createLogger } from '../../../src/log/logger.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';
import { approvalStoreOver } from '../../helpers/approval-store.js';

const TOKEN = 'admin-token-for-decided-again-tests';
const POLICY = 'policy-1';
/** Stands in for the OAuth verification of the reviewers' access tokens: the bearer is the subject, of group ops. */
const verify = async (headers: IncomingHttpHeaders) => ({ ok: true as const, principal: { subject: String(headers.authorization).slice('Bearer '.length), scopes: [], groups: ['ops'], via: 'jwt' as const } });

let store: SqliteStore;
let admin: AdminListener;
let url: string;
let book: ApprovalBook;

before(async () => {
  store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'gatehouse-admin-again-')), 'gatehouse.db'));
  book = new ApprovalBook(approvalStoreOver(store));
  admin = createAdminListener({ book, policyVersion: () => POLICY, auth: new ReviewerAuth(TOKEN, ['ops'], verify), log: createLogger('error', () => {}) });
  url = await admin.listen('127.0.0.1', 0);
});
after(async () => {
  await admin.close();
  await store.close();
});

async function pendingApproval(reviewers: string[] = []): Promise<Approval> {
  const rule = compileApprovalRules([{ id: 'r', by: 'reviewer', reviewers: { subjects: reviewers, groups: [] }, deadlineSeconds: 600, reuse: 1 }])[0]!;
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

async function decide(id: string, verdict: 'approve' | 'reject', bearer = TOKEN): Promise<{ status: number; error?: { code: string; message: string; state?: string } }> {
  const res = await fetch(`${url}/approvals/${id}/${verdict}`, { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, body: '{}' });
  const body = (await res.json()) as { error?: { code: string; message: string; state?: string } };
  return { status: res.status, ...(body.error ? { error: body.error } : {}) };
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

it('a reviewer outside the rule learns nothing of the decision', async () => {
  const a = await pendingApproval(['carol']);
  assert.equal((await decide(a.id, 'approve', 'carol')).status, 200);
  const outsider = await decide(a.id, 'reject', 'bob');
  assert.equal(outsider.status, 409);
  assert.equal(outsider.error?.state, undefined);
  assert.doesNotMatch(outsider.error!.message, /carol|approved/);
});
