// The reviewers' inbox in a real browser (issue 14): Debian's chromium (/usr/bin/chromium, from apt, never a
// downloaded build), headless, driven by playwright-core, talking only to 127.0.0.1. An agent's destructive
// call waits for approval; a reviewer signs in on the page, sees the call, approves it, and the agent's
// identical retry runs once. Also: a rejection with a typed reason reaches the agent; hostile arguments are
// shown as text; the page carries its CSP and framing headers; a change without the session's CSRF token
// is refused; a wrong credential opens no session; signing out ends the session on the server.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type BrowserContext, type Locator, type Page } from 'playwright-core';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { assertSecurityHeaders, chromiumInstalled, MISSING, openBrowser, WAIT_MS, type TestBrowser } from '../helpers/browser.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { approvalIdOf, callTool } from '../helpers/tool-call.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
const ADMIN = 'admin-token-0123456789abcdef';
const HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)>';
const REASON = 'not on a Friday <b>evening</b>';

let up: CountingUpstream;
let gw: TestGateway;
let admin: string;
let context: BrowserContext | undefined;
let page: Page;
let browser: TestBrowser | undefined;
// What the browser saw (filled by test/helpers/browser.ts): dialogs, page errors, CSP violations, requests elsewhere.
let dialogs: string[] = [];
let pageErrors: string[] = [];
let cspViolations: string[] = [];
let elsewhere: string[] = [];

after(async () => {
  try {
    await browser?.close();
  } finally {
    await gw?.close();
    await up?.close();
  }
});

/** The agent: a plain modern tools/call with its API key. */
const call = (name: string, args: Record<string, unknown>) => callTool(gw.url, ALICE, name, args);
const executed = (item: string) => up.executions.filter((e) => e.item === item).length;
const arrived = (item: string) => up.received.filter((b) => b.includes(JSON.stringify(item))).length;

/** The admin API with the admin token, to check what the page did. */
async function shown(id: string): Promise<Record<string, any>> {
  const res = await request(`${admin}/approvals/${id}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(res.statusCode, 200);
  return ((await res.body.json()) as { approval: Record<string, any> }).approval;
}

/** The row's status once the page's fetch has answered (no longer empty or "Sending…"). */
async function statusAfterDecision(row: Locator): Promise<string> {
  const status = row.locator('output.status');
  await status.waitFor({ state: 'attached' });
  const handle = await status.elementHandle();
  await page.waitForFunction((el) => el !== null && el.textContent !== '' && el.textContent !== 'Sending…', handle, { timeout: WAIT_MS });
  return (await status.textContent()) ?? '';
}

const sessionCookies = async () => (await context!.cookies(admin)).filter((c) => c.name === 'gatehouse_admin');

// The project forbids skipped tests: without the browser this file fails, and says why.
test('Debian\'s chromium is installed', () => {
  assert.ok(chromiumInstalled(), MISSING);
});

describe('the inbox page in headless Chromium', () => {
  let browserId: string;
  let hostileId: string;

  before(async () => {
    up = await startCountingUpstream('modern');
    gw = await startGateway({
      upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
      auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }] },
      admin: { enabled: true, port: 0, token: ADMIN },
      policy: { approvals: [{ id: 'destructive', annotations: { destructiveHint: true } }] },
    });
    admin = gw.gateway.adminUrl!;
    assert.match(admin, /^http:\/\/127\.0\.0\.1:\d+$/, 'the admin listener is on loopback');
    browser = await openBrowser(admin);
    ({ context, page, dialogs, pageErrors, cspViolations, elsewhere } = browser);
  });

  test('the agent\'s destructive calls wait for approval', async () => {
    const first = await call('record', { item: 'from-browser' });
    assert.equal(first.structuredContent?.error?.code, 'approval_pending', JSON.stringify(first));
    browserId = approvalIdOf(first);
    assert.match(browserId, /^ap_[0-9a-f]{24}$/);
    const hostile = await call('record', { item: HOSTILE });
    assert.equal(hostile.structuredContent?.error?.code, 'approval_pending', JSON.stringify(hostile));
    hostileId = approvalIdOf(hostile);
    assert.equal(executed('from-browser') + executed(HOSTILE), 0);
  });

  test('the page asks for a credential; a wrong one shows an error and opens no session', { timeout: 30_000 }, async () => {
    const res = await page.goto(`${admin}/`);
    assert.equal(res?.status(), 200);
    assertSecurityHeaders(res, 'login page');
    assert.equal(await page.locator('form[action="/login"] input[name="credential"]').count(), 1);
    assert.equal(await page.locator('table#pending').count(), 0, 'nothing is shown before signing in');
    await page.fill('input[name="credential"]', 'not-the-admin-token-at-all');
    const [refused] = await Promise.all([page.waitForResponse((r) => r.url() === `${admin}/login` && r.request().method() === 'POST'), page.click('form[action="/login"] button[type="submit"]')]);
    assert.equal(refused.status(), 401);
    await page.waitForLoadState('domcontentloaded');
    const problem = page.locator('.problem[role="alert"]');
    await problem.waitFor({ state: 'visible' });
    assert.match((await problem.textContent()) ?? '', /not valid/);
    assert.deepEqual(await sessionCookies(), [], 'no session cookie after a wrong credential');
    assert.equal(await page.locator('table#pending').count(), 0);
  });

  test('signing in shows the pending calls, hostile arguments as text', { timeout: 30_000 }, async () => {
    await page.fill('input[name="credential"]', ADMIN);
    const [inbox] = await Promise.all([
      page.waitForResponse((r) => r.url() === `${admin}/` && r.request().method() === 'GET'),
      page.click('form[action="/login"] button[type="submit"]'),
    ]);
    assert.equal(inbox.status(), 200);
    assertSecurityHeaders(inbox, 'inbox page');
    await page.locator('table#pending').waitFor({ state: 'visible' });
    assert.equal(new URL(page.url()).pathname, '/');

    // The session is an HttpOnly, SameSite=Strict cookie the page's script cannot read.
    const [cookie] = await sessionCookies();
    assert.ok(cookie, 'a session cookie after signing in');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.equal(await page.evaluate(() => document.cookie), '');
    assert.match((await page.locator('meta[name="csrf-token"]').getAttribute('content')) ?? '', /^[A-Za-z0-9_-]{20,}$/);

    const row = page.locator(`tr[data-approval="${browserId}"]`);
    await row.waitFor({ state: 'visible' });
    const text = (await row.textContent()) ?? '';
    assert.match(text, /key:alice/);
    assert.match(text, /up\/record/);
    assert.match(text, /rule destructive/);
    assert.deepEqual(JSON.parse((await row.locator('pre.args').textContent()) ?? ''), { item: 'from-browser' });
    assert.match((await row.getAttribute('data-preview')) ?? '', /^[0-9a-f]{64}$/);

    // The hostile string is text in its <pre>: no element was made of it, no script ran, no dialog opened.
    const hostile = page.locator(`tr[data-approval="${hostileId}"]`);
    const pre = hostile.locator('pre.args');
    const shownText = (await pre.textContent()) ?? '';
    assert.ok(shownText.includes('<script>alert(1)</script>'), shownText);
    assert.ok(shownText.includes('<img src=x onerror=alert(2)>'), shownText);
    assert.equal(JSON.parse(shownText).item, HOSTILE);
    assert.equal(await pre.evaluate((el) => el.children.length), 0);
    assert.equal(await page.locator('main script, main img, img[src="x"]').count(), 0);
    assert.equal(await page.locator('script').count(), 1, 'only the page\'s own /inbox.js');
    assert.equal(await page.locator('script').getAttribute('src'), '/inbox.js');
    await page.waitForTimeout(300); // room for an injected onerror to have fired
    assert.deepEqual(dialogs, []);
  });

  test('a reviewer approves on the page, and the agent\'s identical retry runs once', { timeout: 30_000 }, async () => {
    const row = page.locator('tr[data-approval]', { hasText: 'from-browser' });
    assert.equal(await row.count(), 1);
    assert.equal(await row.getAttribute('data-approval'), browserId);
    const preview = await row.getAttribute('data-preview');
    await row.locator('button.approve').click();
    assert.equal(await statusAfterDecision(row), 'Approved');
    assert.match((await row.getAttribute('class')) ?? '', /\bapproved\b/);
    assert.equal(await row.locator('button.approve').isDisabled(), true);

    const decided = await shown(browserId);
    assert.equal(decided.state, 'approved');
    assert.equal(decided.decision.by, 'admin-token');
    assert.equal(decided.decision.previewSha256, preview, 'the page sent the preview hash the reviewer saw');

    const ran = await call('record', { item: 'from-browser' });
    assert.equal(ran.isError, undefined, JSON.stringify(ran));
    assert.match(ran.content[0]!.text, /recorded from-browser/);
    assert.equal(executed('from-browser'), 1);
    const again = await call('record', { item: 'from-browser' });
    assert.equal(again.structuredContent?.error?.code, 'approval_pending', 'the approval ran its one call');
    assert.equal(executed('from-browser'), 1);
  });

  test('a rejection with a typed reason reaches the agent as approval_rejected', { timeout: 30_000 }, async () => {
    const row = page.locator(`tr[data-approval="${hostileId}"]`);
    await row.locator('input[name="reason"]').fill(REASON);
    await row.locator('button.reject').click();
    assert.equal(await statusAfterDecision(row), 'Rejected');
    const answer = await call('record', { item: HOSTILE });
    assert.equal(answer.structuredContent?.error?.code, 'approval_rejected', JSON.stringify(answer));
    assert.equal(approvalIdOf(answer), hostileId);
    assert.equal(answer.structuredContent?.error?.reason, REASON);
    assert.ok(answer.content[0]!.text.includes(REASON), answer.content[0]!.text);
    assert.equal(arrived(HOSTILE), 0, 'the rejected call never reached the upstream');
    assert.equal(executed(HOSTILE), 0);
    assert.deepEqual(dialogs, []);
  });

  test('a change with the session cookie but without the CSRF token is refused (403 csrf)', { timeout: 30_000 }, async () => {
    const probe = approvalIdOf(await call('record', { item: 'csrf-probe' }));
    const path = `/approvals/${probe}/approve`;
    // From the page itself (same origin, the cookie sent), with no X-CSRF-Token, then with a wrong one.
    // (No named functions inside evaluate: tsx would wrap them in a helper the page does not have.)
    const fromPage = await page.evaluate(async (p) => {
      const answers: Array<{ status: number; body: { error?: { code?: string } } }> = [];
      const tries: Array<Record<string, string>> = [{}, { 'x-csrf-token': 'forged-token-forged-token-forged' }];
      for (const headers of tries) {
        const r = await fetch(p, { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json', ...headers }, body: '{}' });
        answers.push({ status: r.status, body: (await r.json()) as { error?: { code?: string } } });
      }
      return answers;
    }, path);
    assert.equal(fromPage.length, 2);
    for (const r of fromPage) {
      assert.equal(r.status, 403, JSON.stringify(r));
      assert.equal(r.body.error?.code, 'csrf');
    }
    // Outside the browser, with the browser's cookie and no token.
    const [cookie] = await sessionCookies();
    const res = await request(`${admin}${path}`, { method: 'POST', headers: { cookie: `${cookie!.name}=${cookie!.value}`, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.statusCode, 403);
    assert.equal(((await res.body.json()) as { error: { code: string } }).error.code, 'csrf');
    assert.equal((await shown(probe)).state, 'pending', 'nothing was decided');
    // The same request with the page's token goes through: the header was what was missing.
    const withToken = await page.evaluate(async (p) => {
      const csrf = document.querySelector('meta[name="csrf-token"]')!.getAttribute('content')!;
      const r = await fetch(p, { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json', 'x-csrf-token': csrf }, body: '{}' });
      return r.status;
    }, path);
    assert.equal(withToken, 200);
    assert.equal((await shown(probe)).state, 'approved');
  });

  test('the page\'s script ran under its CSP with no error; signing out ends the session on the server', { timeout: 30_000 }, async () => {
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(cspViolations, []);
    assert.deepEqual(dialogs, []);
    assert.deepEqual(elsewhere, [], 'the page asked for nothing outside the admin listener');
    const [cookie] = await sessionCookies();
    assert.ok(cookie);
    await Promise.all([page.waitForURL(`${admin}/`, { waitUntil: 'domcontentloaded' }), page.click('form#logout button[type="submit"]')]);
    await page.locator('form[action="/login"]').waitFor({ state: 'visible' });
    assert.deepEqual(await sessionCookies(), []);
    const stale = await request(`${admin}/approvals`, { headers: { cookie: `${cookie.name}=${cookie.value}` } });
    assert.equal(stale.statusCode, 401, 'the old cookie no longer opens the admin API');
    await stale.body.dump();
  });
});
