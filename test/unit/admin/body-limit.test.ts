// The admin API's answer to a body past its 16 KiB limit (src/admin/server.ts): 413 `body_too_large`, saying
// so. It used to be the 400 `bad_request` of a body that is not JSON, "The body must be a JSON object", so
// a reviewer's script sending a well-formed decision with a long reason (or a pin accept with padding) was
// told its JSON was wrong, and looked for the mistake there. Nothing is decided or accepted either way.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { createAdminListener, type AdminListener } from '../../../src/admin/server.js';
import { ReviewerAuth } from '../../../src/admin/reviewer-auth.js';
import { ApprovalBook } from '../../../src/approvals/book.js';
import { createLogger } from '../../../src/log/logger.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';
import { approvalStoreOver } from '../../helpers/approval-store.js';

const TOKEN = 'admin-token-for-body-limit-tests';
let store: SqliteStore;
let admin: AdminListener;
let url: string;
const accepted: string[] = [];

before(async () => {
  store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'gatehouse-admin-body-')), 'gatehouse.db'));
  const pins = { page: async () => ({ pins: [], next: undefined }), accept: async (ref: string) => (accepted.push(ref), { ok: false as const, status: 404 as const, message: 'none' }), mayReview: () => true, refused: async () => {} };
  admin = createAdminListener({ book: new ApprovalBook(approvalStoreOver(store)), policyVersion: () => 'p', pins, auth: new ReviewerAuth(TOKEN, [], undefined), log: createLogger('error', () => {}) });
  url = await admin.listen('127.0.0.1', 0);
});
after(async () => {
  await admin.close();
  await store.close();
});

test('a body past 16 KiB is 413 body_too_large, on decisions and pin accepts; one within it is read', async () => {
  const big = JSON.stringify({ reason: 'r'.repeat(17 * 1024) });
  for (const path of ['/approvals/ap_000000000000000000000000/approve', '/pins/up%2Ftool/accept']) {
    const res = await request(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: big });
    const text = await res.body.text();
    assert.equal(res.statusCode, 413, `${path}: ${text}`);
    const error = (JSON.parse(text) as { error: { code: string; message: string } }).error;
    assert.equal(error.code, 'body_too_large');
    assert.match(error.message, /16 KiB/);
  }
  assert.deepEqual(accepted, []);
  // Within the limit the body is read as ever: this approval does not exist.
  const res = await request(`${url}/approvals/ap_000000000000000000000000/approve`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ reason: 'fine' }) });
  assert.equal(res.statusCode, 404);
  await res.body.dump();
});
