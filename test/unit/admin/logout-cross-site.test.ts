// POST /logout from another site (src/admin/server.ts). The session cookie is SameSite=Strict, so a form on
// another site posting to /logout arrives without it and the server ends no session; but the answer still
// carried `Set-Cookie: gatehouse_admin=; Max-Age=0`, and a browser applies cookies set in the answer to a
// top-level navigation, cross-site or not (RFC 6265bis §5.7): any page a reviewer visited could sign them out
// of the inbox (mid-review, as often as it liked). A request the browser says comes from elsewhere now gets
// 403 csrf and no cookie; the inbox page's own form (same-origin), and clients that say nothing, sign out.
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

const TOKEN = 'admin-token-for-logout-tests';
let store: SqliteStore;
let admin: AdminListener;
let url: string;

before(async () => {
  store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'gatehouse-admin-logout-')), 'gatehouse.db'));
  admin = createAdminListener({ book: new ApprovalBook(approvalStoreOver(store)), policyVersion: () => 'p', auth: new ReviewerAuth(TOKEN, [], undefined), log: createLogger('error', () => {}) });
  url = await admin.listen('127.0.0.1', 0);
});
after(async () => {
  await admin.close();
  await store.close();
});

async function login(): Promise<string> {
  const res = await request(`${url}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' }, body: `credential=${TOKEN}` });
  await res.body.dump();
  const cookie = String(res.headers['set-cookie']).split(';')[0]!;
  assert.match(cookie, /^gatehouse_admin=.+/);
  return cookie;
}

test('a cross-site POST /logout clears no cookie and ends no session; the page\'s own sign-out does', async () => {
  const cookie = await login();
  for (const site of ['cross-site', 'same-site']) {
    // As a browser sends another site's form: no cookie (SameSite=Strict), and where it comes from.
    const res = await request(`${url}/logout`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': site }, body: '' });
    await res.body.dump();
    assert.equal(res.headers['set-cookie'], undefined, `${site}: no cookie is set or cleared`);
    assert.equal(res.statusCode, 403);
  }
  const page = await request(`${url}/`, { headers: { cookie } });
  assert.match(await page.body.text(), /Signed in as/);
  const out = await request(`${url}/logout`, { method: 'POST', headers: { cookie, 'sec-fetch-site': 'same-origin' } });
  await out.body.dump();
  assert.equal(out.statusCode, 303);
  assert.match(String(out.headers['set-cookie']), /^gatehouse_admin=; .*Max-Age=0/);
  const after = await request(`${url}/`, { headers: { cookie } });
  assert.doesNotMatch(await after.body.text(), /Signed in as/);
});
