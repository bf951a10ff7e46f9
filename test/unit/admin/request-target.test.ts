// The admin API's answer to a request target it cannot read (src/admin/server.ts). `//[`, `//a:b@[` and the
// like are no URL Node's parser takes; the handler used to throw on them, and the catch-all answered 503
// `unavailable`, "is the store reachable?", and logged an error: a client's typo was reported as a store
// outage, to the client and to whoever watches the logs. It is a 400 `bad_request`, the store untouched.
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

const TOKEN = 'admin-token-for-request-target-tests';
let store: SqliteStore;
let admin: AdminListener;
let url: string;
const errors: string[] = [];

before(async () => {
  store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'gatehouse-admin-target-')), 'gatehouse.db'));
  const log = createLogger('error', (line) => errors.push(line));
  admin = createAdminListener({ book: new ApprovalBook(approvalStoreOver(store)), policyVersion: () => 'p', auth: new ReviewerAuth(TOKEN, [], undefined), log });
  url = await admin.listen('127.0.0.1', 0);
});
after(async () => {
  await admin.close();
  await store.close();
});

test('a request target that is no URL is a 400 bad_request, neither a 503 nor an error in the log', async () => {
  for (const target of ['//[', '//a:b@[/approvals', '//%zz:x/approvals']) {
    for (const method of ['GET', 'POST'] as const) {
      const res = await request(`${url}${target}`, { method, headers: { authorization: `Bearer ${TOKEN}` } });
      const text = await res.body.text();
      assert.equal(res.statusCode, 400, `${method} ${target}: ${text}`);
      assert.equal((JSON.parse(text) as { error: { code: string } }).error.code, 'bad_request');
      assert.match(res.headers['content-type'] as string, /^application\/json/);
    }
  }
  assert.deepEqual(errors, []);
  // The API itself still answers.
  const ok = await request(`${url}/approvals`, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(ok.statusCode, 200);
  await ok.body.dump();
});
