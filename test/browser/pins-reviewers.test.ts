// Changed tools on the inbox page for OAuth reviewers (tools.pinningReviewers; DESIGN.md §7, the admin
// contract), in Debian's chromium driven by playwright-core, talking only to 127.0.0.1; the tokens come
// from a real authorization server on loopback. A tool's description is untrusted unless it comes from a
// trusted server (2026-07-28 index.mdx §Tool Safety), so accepting its change is a review limited per tool:
// a reviewer is shown only the changed tools they review, accepts those on the page, and a change the
// reviewers of its tool were changed for after the page was loaded is refused, with the reason shown.
// Until 5 December every admin-group member was shown, and could accept, every changed tool.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { validateConfigObject } from '../../src/config/load.js';
import { chromiumInstalled, MISSING, openBrowser, settledStatus, signIn as signInAs, type TestBrowser } from '../helpers/browser.js';
import type { TestGateway } from '../helpers/gateway.js';
import { adminRequest } from '../helpers/http.js';
import { PIN_ADMIN_TOKEN, startPinReviewerGateway, type PinReviewerGateway } from '../helpers/pin-reviewer-gateway.js';

let reviewers: PinReviewerGateway | undefined;
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

const signIn = (credential: string) => signInAs(page, admin, credential);

const shownPins = async () => (await page.locator('section[data-pin]').evaluateAll((els) => els.map((e) => e.getAttribute('data-pin') ?? ''))).sort();

/** Clicks "Accept change" in the pin's section; resolves with the API's status and the status the page shows. */
async function accept(section: Locator, ref: string): Promise<{ status: number; shown: string }> {
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.url() === `${admin}/pins/${encodeURIComponent(ref)}/accept` && r.request().method() === 'POST'),
    section.locator('button.accept').click(),
  ]);
  return { status: answer.status(), shown: await settledStatus(page, section) };
}

async function pinState(ref: string): Promise<string | undefined> {
  const r = await adminRequest(admin, 'GET', '/pins', { bearer: PIN_ADMIN_TOKEN });
  return (r.json.pins as Array<{ ref: string; state: string }>).find((p) => p.ref === ref)?.state;
}

// The project forbids skipped tests: without the browser this file fails, and says why.
test('Debian\'s chromium is installed', () => {
  assert.ok(chromiumInstalled(), MISSING);
});

describe('changed tools on the inbox page, per tool\'s reviewers, in headless Chromium', () => {
  before(async () => {
    // up/lookup is team-b's to review; up/record is named by no entry, so any admin's.
    reviewers = await startPinReviewerGateway(['up'], [{ tools: ['up/lookup'], reviewers: { groups: ['team-b'] } }]);
    gw = reviewers.gw;
    admin = gw.gateway.adminUrl!;
    browser = await openBrowser(admin);
    page = browser.page;
  });

  test('a reviewer of another team is shown only the changed tools they review, nothing of the others', { timeout: 60_000 }, async () => {
    await signIn(await tokenFor('ann', ['team-a']));
    await page.locator('section[data-pin="up/record"]').waitFor({ state: 'visible' });
    assert.deepEqual(await shownPins(), ['up/record']);
    assert.ok(!((await page.content()).includes('(lookup)')), 'nothing of up/lookup\'s change is on the page');
  });

  test('the tool\'s reviewer sees it and accepts it on the page; the agent\'s call runs', { timeout: 60_000 }, async () => {
    await signIn(await tokenFor('bob', ['team-b']));
    await page.locator('section[data-pin="up/lookup"]').waitFor({ state: 'visible' });
    assert.deepEqual(await shownPins(), ['up/lookup', 'up/record']);
    const done = await accept(page.locator('section[data-pin="up/lookup"]'), 'up/lookup');
    assert.deepEqual(done, { status: 200, shown: 'Accepted' });
    assert.equal(await pinState('up/lookup'), 'pinned');
    assert.equal((await reviewers!.call('up_lookup', 'after-bob')).isError, undefined);
  });

  test('a change whose reviewers changed since the page was loaded is refused on the page, with the reason, and stays unaccepted', { timeout: 60_000 }, async () => {
    await signIn(await tokenFor('ann', ['team-a']));
    const section = page.locator('section[data-pin="up/record"]');
    await section.waitFor({ state: 'visible' });
    // The operator gives up/record to team-b while ann's page shows it.
    const config = reviewers!.config;
    const tools = { ...(config.tools as Record<string, unknown>), pinningReviewers: [{ tools: ['up/*'], reviewers: { groups: ['team-b'] } }] };
    assert.deepEqual(await gw.gateway.reload(validateConfigObject({ ...config, tools }, 'test')), []);
    const refused = await accept(section, 'up/record');
    assert.equal(refused.status, 403);
    assert.match(refused.shown, /not among the reviewers of this tool's changes/);
    assert.match((await section.getAttribute('class')) ?? '', /\bfailed\b/);
    assert.equal(await pinState('up/record'), 'changed');
    assert.equal((await reviewers!.call('up_record', 'still-refused')).structuredContent?.error?.code, 'tool_changed');
    // Loaded again, the page no longer shows it to her.
    await page.goto(`${admin}/`);
    await page.locator('form#logout').waitFor({ state: 'visible' });
    assert.deepEqual(await shownPins(), []);
  });

  test('the page ran under its CSP with no error, dialog or request elsewhere', () => {
    assert.deepEqual(browser!.pageErrors, []);
    assert.deepEqual(browser!.cspViolations, []);
    assert.deepEqual(browser!.dialogs, []);
    assert.deepEqual(browser!.elsewhere, [], 'the page asked for nothing outside the admin listener');
  });
});
