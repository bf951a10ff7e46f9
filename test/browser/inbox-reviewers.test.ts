// The reviewers' inbox for reviewers who sign in with an OAuth access token (DESIGN.md §7, the admin
// contract), in Debian's chromium driven by playwright-core, talking only to 127.0.0.1; the tokens come from
// a real authorization server on loopback. Four eyes: a reviewer whose own call waits for approval sees it
// marked as theirs, with no Approve button (they may still reject it, which withdraws it), and the API
// refuses the approval should the page be got round; another reviewer approves it on the page. And a
// reviewer is shown only the calls they may decide: those of rules naming them, or naming no one.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type Locator, type Page } from 'playwright-core';
import { chromiumInstalled, MISSING, openBrowser, settledStatus, signIn as signInAs, type TestBrowser } from '../helpers/browser.js';
import type { CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startReviewerGateway, type ReviewerGateway } from '../helpers/reviewer-gateway.js';
import { approvalIdOf, callTool } from '../helpers/tool-call.js';

let reviewers: ReviewerGateway | undefined;
let up: CountingUpstream;
let gw: TestGateway;
let admin: string;
let browser: TestBrowser | undefined;
let page: Page;

after(async () => {
  try {
    await browser?.close();
  } finally {
    await reviewers?.close();
  }
});

const tokenFor = (sub: string, groups: string[]) => reviewers!.tokenFor(sub, groups);

const call = (bearer: string, item: string) => callTool(gw.url, bearer, 'record', { item });
const executed = (item: string) => up.executions.filter((e) => e.item === item).length;

const signIn = (credential: string) => signInAs(page, admin, credential);
const statusAfterDecision = (row: Locator) => settledStatus(page, row);

// The project forbids skipped tests: without the browser this file fails, and says why.
test('Debian\'s chromium is installed', () => {
  assert.ok(chromiumInstalled(), MISSING);
});

describe('the inbox page for OAuth reviewers, in headless Chromium', () => {
  before(async () => {
    reviewers = await startReviewerGateway({
      admin: { enabled: true, port: 0, groups: ['sre', 'approvers'] },
      policy: { approvals: [{ id: 'sre-only', tools: ['up/record'], arguments: { item: 'sre-*' }, reviewers: { groups: ['sre'] } }, { id: 'anyone', tools: ['up/record'] }] },
    });
    ({ up, gw } = reviewers);
    admin = gw.gateway.adminUrl!;
    browser = await openBrowser(admin);
    page = browser.page;
  });

  test('a reviewer\'s own call is marked theirs, with no Approve button; the API refuses it from the page; another reviewer approves it', { timeout: 60_000 }, async () => {
    const carol = await tokenFor('carol', ['sre']);
    const id = approvalIdOf(await call(carol, 'sre-own'));
    assert.match(id, /^ap_[0-9a-f]{24}$/);

    await signIn(carol);
    const row = page.locator(`tr[data-approval="${id}"]`);
    await row.waitFor({ state: 'visible' });
    assert.equal(await row.getAttribute('data-own'), 'true');
    assert.equal(await row.locator('button.approve').count(), 0, 'no Approve button on one\'s own call');
    assert.match((await row.locator('.own').textContent()) ?? '', /your own call/i);
    assert.equal(await row.locator('button.reject').count(), 1, 'withdrawing it stays possible');

    // Got round (the request the button would send, from the page with its CSRF token): refused all the same.
    const forced = await page.evaluate(async (path) => {
      const csrf = document.querySelector('meta[name="csrf-token"]')!.getAttribute('content')!;
      const r = await fetch(path, { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json', 'x-csrf-token': csrf }, body: '{}' });
      return { status: r.status, body: (await r.json()) as { error?: { code?: string } } };
    }, `/approvals/${id}/approve`);
    assert.equal(forced.status, 403, JSON.stringify(forced));
    assert.equal(forced.body.error?.code, 'self_approval');
    assert.equal((await call(carol, 'sre-own')).structuredContent?.error?.code, 'approval_pending');

    await signIn(await tokenFor('dave', ['sre']));
    const theirs = page.locator(`tr[data-approval="${id}"]`);
    await theirs.waitFor({ state: 'visible' });
    assert.equal(await theirs.getAttribute('data-own'), null);
    await theirs.locator('button.approve').click();
    assert.equal(await statusAfterDecision(theirs), 'Approved');
    assert.equal((await call(carol, 'sre-own')).isError, undefined);
    assert.equal(executed('sre-own'), 1);
  });

  test('a reviewer is shown only the calls of rules they review (or that name no one), their arguments nowhere on the page', { timeout: 60_000 }, async () => {
    const erin = await tokenFor('erin', []);
    const held = approvalIdOf(await call(erin, 'sre-payroll-export'));
    const open = approvalIdOf(await call(erin, 'open-note'));

    await signIn(await tokenFor('bob', ['approvers']));
    await page.locator(`tr[data-approval="${open}"]`).waitFor({ state: 'visible' });
    assert.equal(await page.locator(`tr[data-approval="${held}"]`).count(), 0, 'a call of a rule bob does not review is not listed');
    assert.ok(!(await page.content()).includes('sre-payroll-export'), 'nor are its arguments anywhere on the page');

    await signIn(await tokenFor('dave', ['sre']));
    await page.locator(`tr[data-approval="${held}"]`).waitFor({ state: 'visible' });
    await page.locator(`tr[data-approval="${open}"]`).waitFor({ state: 'visible' });
  });

  test('the page\'s script ran under its CSP with no error and asked nothing elsewhere', () => {
    assert.deepEqual(browser!.pageErrors, []);
    assert.deepEqual(browser!.cspViolations, []);
    assert.deepEqual(browser!.dialogs, []);
    assert.deepEqual(browser!.elsewhere, []);
  });
});
