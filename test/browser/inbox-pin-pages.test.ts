// The inbox page's changed tools a page at a time, in Debian's chromium driven by playwright-core, talking
// only to 127.0.0.1. Until 5 December each load read every pin in the store to show the changed ones, all
// on one page; now a page holds 25, "More changed tools" leads to the next and "First changed tools" back,
// and a change is accepted from any page. Real SQLite store and admin listener; the pins are made through
// the pin book as calls make them (30 changed tools among 90).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { request } from 'undici';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { chromiumInstalled, MISSING, openBrowser, settledStatus, signIn, type TestBrowser } from '../helpers/browser.js';
import { pinAndChange, startPinAdmin, type PinAdmin } from '../helpers/pin-admin.js';

const TOKEN = 'admin-token-for-inbox-pin-pages-browser';
/** The changed tools, by ref: every third of 90 pinned, 30 in all. */
let CHANGED: string[];

let dir: string | undefined;
let admin: PinAdmin | undefined;
let browser: TestBrowser | undefined;
let page: Page;

after(async () => {
  try {
    await browser?.close();
  } finally {
    await admin?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }
});

const shownPins = () => page.locator('section[data-pin]').evaluateAll((els) => els.map((e) => e.getAttribute('data-pin') ?? ''));

/** Follows the link `id` and waits for the page it leads to. */
async function follow(id: string): Promise<void> {
  await Promise.all([page.waitForURL((u) => u.pathname === '/', { waitUntil: 'domcontentloaded' }), page.click(`a#${id}`)]);
  await page.locator('form#logout').waitFor({ state: 'visible' });
}

async function pinState(ref: string): Promise<string | undefined> {
  const res = await request(`${admin!.url}/pins?limit=500`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return ((await res.body.json()) as { pins: Array<{ ref: string; state: string }> }).pins.find((p) => p.ref === ref)?.state;
}

// The project forbids skipped tests: without the browser this file fails, and says why.
test('Debian\'s chromium is installed', () => {
  assert.ok(chromiumInstalled(), MISSING);
});

describe('changed tools a page at a time on the inbox page, in headless Chromium', () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-inbox-pin-pages-browser-'));
    admin = await startPinAdmin(new SqliteStore(join(dir, 'gatehouse.db')), TOKEN);
    CHANGED = await pinAndChange(admin.pins, 90, 3);
    browser = await openBrowser(admin.url);
    page = browser.page;
  });

  test('a page shows 25 changed tools; "More changed tools" shows the rest, "First changed tools" leads back', { timeout: 60_000 }, async () => {
    await signIn(page, admin!.url, TOKEN);
    await page.locator('section[data-pin]').first().waitFor({ state: 'visible' });
    assert.deepEqual(await shownPins(), CHANGED.slice(0, 25));
    assert.equal(await page.locator('a#pins-first').count(), 0);

    await follow('pins-more');
    assert.deepEqual(await shownPins(), CHANGED.slice(25));
    assert.equal(await page.locator('a#pins-more').count(), 0, 'the last page');

    await follow('pins-first');
    assert.deepEqual(await shownPins(), CHANGED.slice(0, 25));
  });

  test('a change is accepted from the second page, and is gone from the pages once loaded again', { timeout: 60_000 }, async () => {
    await follow('pins-more');
    const ref = CHANGED[27]!;
    const section = page.locator(`section[data-pin="${ref}"]`);
    const [answer] = await Promise.all([page.waitForResponse((r) => r.url() === `${admin!.url}/pins/${encodeURIComponent(ref)}/accept` && r.request().method() === 'POST'), section.locator('button.accept').click()]);
    assert.equal(answer.status(), 200);
    assert.equal(await settledStatus(page, section), 'Accepted');
    assert.equal(await pinState(ref), 'pinned');
    await page.reload();
    await page.locator('section[data-pin]').first().waitFor({ state: 'visible' });
    assert.deepEqual(await shownPins(), CHANGED.slice(25).filter((r) => r !== ref));
  });

  test('the page ran under its CSP with no error, dialog or request elsewhere', () => {
    assert.deepEqual(browser!.pageErrors, []);
    assert.deepEqual(browser!.cspViolations, []);
    assert.deepEqual(browser!.dialogs, []);
    assert.deepEqual(browser!.elsewhere, []);
  });
});
