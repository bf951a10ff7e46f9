// The admin API's approve/reject over a real SQLite store, for unit tests of its decisions: a book and an
// admin listener started before the file's tests and closed after them, approvals made pending through the
// book as a call would make them, and decisions POSTed as a reviewer sends them.

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import { createAdminListener, type AdminListener } from '../../src/admin/server.js';
import type { ReviewerAuth } from '../../src/admin/reviewer-auth.js';
import { ApprovalBook, type ApprovalStore } from '../../src/approvals/book.js';
import type { Approval } from '../../src/approvals/approval.js';
import { compileApprovalRules } from '../../src/approvals/rules.js';
import { createLogger } from '../../src/log/logger.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { approvalStoreOver } from './approval-store.js';

/** The policy version every approval here is made under. */
export const POLICY = 'policy-1';

export interface AdminOverBook {
  readonly store: SqliteStore;
  readonly book: ApprovalBook;
  /** The admin listener's base URL. */
  readonly url: string;
}

/**
 * A store in a new temporary folder (`dirPrefix`), the book over it (`approvals` may wrap the store port, to
 * make an operation fail on purpose) and the admin API in front, with `auth`: call at the top of a test file.
 */
export function adminOverBook(dirPrefix: string, auth: () => ReviewerAuth, approvals: (store: SqliteStore) => ApprovalStore = approvalStoreOver): AdminOverBook {
  let store: SqliteStore | undefined;
  let book: ApprovalBook | undefined;
  let admin: AdminListener | undefined;
  let url: string | undefined;
  before(async () => {
    store = new SqliteStore(join(mkdtempSync(join(tmpdir(), dirPrefix)), 'gatehouse.db'));
    book = new ApprovalBook(approvals(store));
    admin = createAdminListener({ book, policyVersion: () => POLICY, auth: auth(), log: createLogger('error', () => {}) });
    url = await admin.listen('127.0.0.1', 0);
  });
  after(async () => {
    await admin?.close();
    await store?.close();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the admin API is started in before()');
    return value;
  };
  return {
    get store() {
      return started(store);
    },
    get book() {
      return started(book);
    },
    get url() {
      return started(url);
    },
  };
}

/** A call's pending approval under a reviewer rule (`reviewers`: its subjects; none, any reviewer). */
export async function pendingApproval(book: ApprovalBook, reviewers: string[] = []): Promise<Approval> {
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

/** A reviewer's approve or reject of approval `id`, with `bearer`: the status and the JSON body. */
export async function postDecision<Body>(url: string, id: string, verdict: 'approve' | 'reject', bearer: string): Promise<{ status: number; body: Body }> {
  const res = await fetch(`${url}/approvals/${id}/${verdict}`, { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, body: '{}' });
  return { status: res.status, body: (await res.json()) as Body };
}
