// Signing a reviewer out from another page (src/admin/server.ts POST /logout), in Debian's chromium. A page
// on another port of the admin host (same site, another origin: any local dev server, a tool's own UI)
// submits a form to /logout. The browser sends the SameSite=Strict cookie (same site) with Sec-Fetch-Site:
// same-site; the server ended no session, but its answer cleared the cookie, and the reviewer was signed
// out (seen here before the fix: the cookie gone). Now it is 403 csrf and the cookie stays.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdminListener, type AdminListener } from '../../src/admin/server.js';
import { ReviewerAuth } from '../../src/admin/reviewer-auth.js';
import { ApprovalBook } from '../../src/approvals/book.js';
import { createLogger } from '../../src/log/logger.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { approvalStoreOver } from '../helpers/approval-store.js';
import { openBrowser, type TestBrowser } from '../helpers/browser.js';

const TOKEN = 'admin-token-for-logout-browser-test';
let store: SqliteStore;
let admin: AdminListener;
let url: string;
let other: Server;
let otherUrl: string;
let browser: TestBrowser | undefined;

before(async () => {
  store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'gatehouse-logout-browser-')), 'gatehouse.db'));
  admin = createAdminListener({ book: new ApprovalBook(approvalStoreOver(store)), policyVersion: () => 'p', auth: new ReviewerAuth(TOKEN, [], undefined), log: createLogger('error', () => {}) });
  url = await admin.listen('127.0.0.1', 0);
  // The other page: a form that posts itself to the inbox's /logout as soon as it loads.
  other = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><form method="post" action="${url}/logout" id="f"></form><script>document.getElementById('f').submit()</script>`));
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
  otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}/`;
});
after(async () => {
  await browser?.close();
  await new Promise<void>((r) => other.close(() => r()));
  await admin.close();
  await store.close();
});

test('a page on another port of the admin host cannot sign the reviewer out', { timeout: 90_000 }, async () => {
  browser = await openBrowser(url);
  const { page, context } = browser;
  await page.goto(`${url}/`);
  await page.fill('#credential', TOKEN);
  await Promise.all([page.waitForURL(`${url}/`), page.click('button[type="submit"]')]);
  assert.deepEqual((await context.cookies()).map((c) => c.name), ['gatehouse_admin']);
  const logout = page.waitForResponse((r) => r.url() === `${url}/logout`);
  await page.goto(otherUrl);
  const answer = await logout;
  assert.equal(answer.status(), 403);
  assert.equal((await answer.request().allHeaders())['sec-fetch-site'], 'same-site');
  assert.deepEqual((await context.cookies()).map((c) => c.name), ['gatehouse_admin'], 'still signed in');
  await page.goto(`${url}/`);
  await page.locator('form#logout').waitFor({ state: 'visible' });
  // The page's own sign-out still works.
  await Promise.all([page.waitForURL(`${url}/`, { waitUntil: 'domcontentloaded' }), page.click('form#logout button[type="submit"]')]);
  assert.deepEqual((await context.cookies()).map((c) => c.name), []);
});
