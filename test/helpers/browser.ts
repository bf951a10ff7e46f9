// Debian's chromium for the browser tests (test/browser/), driven by playwright-core and talking only to
// 127.0.0.1: launched on a fresh profile, watched for dialogs, page errors, CSP violations and requests to
// anything but the page under test, and closed with a check that no chromium process is left behind.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page, type Response } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const WAIT_MS = 15_000;
/**
 * Chromium's start, on a fresh profile: on a 2-core CI machine, with the two browser files and other test
 * files running at once, a cold start once took over 15 s (a fresh-clone run of 1 December). A start that
 * slow says nothing about the page, so it gets longer than the page's own waits.
 */
const LAUNCH_MS = 60_000;
// The project forbids skipped tests: without the browser a browser test fails, and says why.
export const MISSING = `Debian's chromium is not installed at ${CHROMIUM}: apt-get install chromium (.ci/run installs it when missing)`;

export function chromiumInstalled(): boolean {
  return existsSync(CHROMIUM);
}

export interface TestBrowser {
  context: BrowserContext;
  page: Page;
  dialogs: string[];
  pageErrors: string[];
  cspViolations: string[];
  /** Every URL the browser asked for that is not under `origin` (there should be none). */
  elsewhere: string[];
  /** Closes the browser (bounded; its process group killed if it hangs), checks nothing is left, removes the profile. */
  close(): Promise<void>;
}

/** Launches chromium headless on a fresh profile; `origin` is the only place the page may reach. */
export async function openBrowser(origin: string): Promise<TestBrowser> {
  if (!chromiumInstalled()) throw new Error(MISSING);
  const profile = mkdtempSync(join(tmpdir(), 'gatehouse-chromium-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      timeout: LAUNCH_MS,
      // Nothing but 127.0.0.1: no background fetches, updates or sync. Those flags alone still let Chromium 156
      // look up accounts.google.com, update.googleapis.com and content-autofill.googleapis.com (seen with
      // strace), so every name but 127.0.0.1 resolves to nothing and no proxy is used.
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--no-proxy-server', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      ],
    });
  } catch (err) {
    rmSync(profile, { recursive: true, force: true });
    throw err;
  }
  context.setDefaultTimeout(WAIT_MS);
  context.setDefaultNavigationTimeout(WAIT_MS);
  // Chromium's browser process (its process group holds the renderers), to check it is gone after.
  const browserProcess = findBrowserProcess(profile);
  const watched: Omit<TestBrowser, 'page' | 'close'> = { context, dialogs: [], pageErrors: [], cspViolations: [], elsewhere: [] };
  const close = async (): Promise<void> => {
    try {
      const closed = await Promise.race([context.close().then(() => true), new Promise<boolean>((r) => setTimeout(r, WAIT_MS, false).unref())]);
      if (!closed && browserProcess !== undefined) process.kill(-browserProcess.pid, 'SIGKILL');
      if (browserProcess !== undefined) {
        const left = await processGroupGone(browserProcess, 5_000);
        assert.deepEqual(left, [], `chromium processes left running after close: ${left.join(', ')}`);
      }
      assert.ok(closed, `chromium did not close within ${WAIT_MS} ms`);
    } finally {
      rmSync(profile, { recursive: true, force: true });
    }
  };
  if (browserProcess === undefined) {
    await close().catch(() => {});
    assert.fail('chromium\'s browser process was not found among this process\'s children');
  }
  context.on('request', (r) => {
    if (!r.url().startsWith(`${origin}/`)) watched.elsewhere.push(r.url());
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('dialog', (d) => {
    watched.dialogs.push(`${d.type()}: ${d.message()}`);
    void d.dismiss().catch(() => {});
  });
  page.on('pageerror', (err) => watched.pageErrors.push(String(err)));
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) watched.cspViolations.push(m.text());
  });
  return { ...watched, page, close };
}

/** The inbox page's defences in its response headers: a strict CSP and no framing. */
export function assertSecurityHeaders(res: Response | null, what: string): void {
  assert.ok(res, `${what}: no response`);
  const headers = res.headers();
  const csp = headers['content-security-policy'] ?? '';
  assert.match(csp, /(^|;)\s*script-src 'self'(;|$)/, `${what}: CSP ${csp}`);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, `${what}: CSP ${csp}`);
  assert.match(csp, /frame-ancestors 'none'/, `${what}: CSP ${csp}`);
  assert.equal(headers['x-frame-options'], 'DENY', what);
}

/** Signs `page` in to the inbox at `origin` with this credential, after signing out whoever was signed in. */
export async function signIn(page: Page, origin: string, credential: string): Promise<void> {
  await page.goto(`${origin}/`);
  if ((await page.locator('form#logout').count()) > 0) {
    await Promise.all([page.waitForURL(`${origin}/`, { waitUntil: 'domcontentloaded' }), page.click('form#logout button[type="submit"]')]);
  }
  await page.fill('input[name="credential"]', credential);
  await Promise.all([page.waitForResponse((r) => r.url() === `${origin}/` && r.request().method() === 'GET'), page.click('form[action="/login"] button[type="submit"]')]);
  await page.locator('form#logout').waitFor({ state: 'visible' });
}

/** The text of a row's or a pin's `output.status` once the page's fetch has answered (no longer empty or "Sending…"). */
export async function settledStatus(page: Page, within: Locator): Promise<string> {
  const status = within.locator('output.status');
  const handle = await status.elementHandle();
  await page.waitForFunction((el) => el !== null && el.textContent !== '' && el.textContent !== 'Sending…', handle, { timeout: WAIT_MS });
  return (await status.textContent()) ?? '';
}

/** Chromium's browser process: the child of this process started with our fresh profile directory. */
function findBrowserProcess(dir: string): { pid: number; start: string } | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (!cmdline.some((a) => a === `--user-data-dir=${dir}`) || cmdline.some((a) => a.startsWith('--type='))) continue;
      const stat = statOf(Number(entry));
      if (stat?.ppid === process.pid) return { pid: Number(entry), start: stat.start };
    } catch {
      // The process ended while we looked.
    }
  }
  return undefined;
}

function statOf(pid: number): { ppid: number; pgid: number; start: string } | undefined {
  try {
    // After the command name (in parentheses, may hold spaces): state ppid pgrp … starttime (field 22).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(f[1]), pgid: Number(f[2]), start: f[19]! };
  } catch {
    return undefined;
  }
}

/** Waits until the browser process and everything in its process group have exited; returns what is left. */
async function processGroupGone(browser: { pid: number; start: string }, ms: number): Promise<number[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const left: number[] = [];
    if (statOf(browser.pid)?.start === browser.start) left.push(browser.pid);
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === browser.pid) continue;
      if (statOf(Number(entry))?.pgid === browser.pid) left.push(Number(entry));
    }
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}
