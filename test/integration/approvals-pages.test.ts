// GET /approvals a page at a time (README §Approvals and tool pinning, the admin API): `limit` (default 100,
// at most 500) and `cursor`, answered with `nextCursor` while more follow. It once answered every approval
// in the store in one body, however many (a week of decided ones kept besides), read and serialised whole
// on each request, by the CLI and by the inbox page alike. `gatehouse approvals list` and the inbox page
// follow the pages. Real stores (SQLite and Redis), the real admin listener and the built CLI, with more
// approvals than one page holds.

import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request, type Dispatcher } from 'undici';
import { createAdminListener } from '../../src/admin/server.js';
import { ReviewerAuth } from '../../src/admin/reviewer-auth.js';
import { ApprovalBook, type CallToApprove } from '../../src/approvals/book.js';
import { compileApprovalRules } from '../../src/approvals/rules.js';
import type { Principal } from '../../src/pipeline/principal.js';
import type { Route } from '../../src/pipeline/context.js';
import { createLogger } from '../../src/log/logger.js';
import type { Store } from '../../src/store/store.js';
import { approvalStoreOver } from '../helpers/approval-store.js';
import { onBothStores } from '../helpers/both-stores.js';
import { runCli } from '../helpers/cli.js';

const TOKEN = 'admin-token-for-page-tests';
const POLICY = 'policy-1';
const TOTAL = 230;
const rule = compileApprovalRules([{ id: 'r', by: 'reviewer', reviewers: { subjects: [], groups: [] }, deadlineSeconds: 600, reuse: 1 }])[0]!;
const route: Route = { kind: 'tools', ref: 'up/send', publicName: 'send', original: 'send', upstream: 'up', listed: true, params: [] };
const callOf = (i: number): CallToApprove => ({ callId: randomUUID(), principal: { subject: `key:c${i}`, scopes: [], groups: [], via: 'api_key', keyId: `c${i}` } satisfies Principal, route, args: { item: i }, rule, policyVersion: POLICY });

interface Listed {
  status: number;
  approvals: Array<{ id: string; state: string; createdAt: number }>;
  nextCursor?: string;
  error?: { code: string; message: string };
}

onBothStores({ tmpPrefix: 'gatehouse-approval-pages-', keyPrefix: 'approval-pages:' }, (open, reset) => {
  let store: Store;
  let url: string;
  let close: () => Promise<void>;
  let opened: string[];
  let rejected: Set<string>;
  beforeEach(async () => {
    await reset();
    store = open();
    const book = new ApprovalBook(approvalStoreOver(store));
    opened = [];
    rejected = new Set();
    for (let i = 0; i < TOTAL; i++) {
      const v = await book.forCall(callOf(i));
      assert.equal(v.kind, 'pending');
      opened.push(v.approval.id);
    }
    // Every tenth rejected, so a state filter has something to leave out; pins live beside them, never listed.
    for (let i = 0; i < TOTAL; i += 10) {
      assert.equal((await book.decide(opened[i]!, { approve: false, by: 'reviewer', policyVersion: POLICY, requestId: randomUUID(), mayDecide: () => true })).ok, true);
      rejected.add(opened[i]!);
    }
    await store.putApproval('pin:up/send', JSON.stringify({ kind: 'pin', ref: 'up/send' }), 600_000);
    const admin = createAdminListener({ book, policyVersion: () => POLICY, auth: new ReviewerAuth(TOKEN, [], undefined), log: createLogger('error', () => {}) });
    url = await admin.listen('127.0.0.1', 0);
    close = async () => {
      await admin.close();
      await store.close();
    };
  });

  async function list(query: string): Promise<Listed> {
    const res = await request(`${url}/approvals${query}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const json = (await res.body.json()) as Omit<Listed, 'status'>;
    return { status: res.statusCode, ...json };
  }

  /** Follows nextCursor from the first page; bounded, and each page checked against the limit. */
  async function all(state: string, limit: number): Promise<Listed['approvals']> {
    const found: Listed['approvals'] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 50; pages++) {
      const page = await list(`?state=${state}&limit=${limit}${cursor !== undefined ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      assert.equal(page.status, 200, JSON.stringify(page).slice(0, 300));
      assert.ok(page.approvals.length <= limit, `a page of ${page.approvals.length} for limit ${limit}`);
      found.push(...page.approvals);
      if (page.nextCursor === undefined) return found;
      cursor = page.nextCursor;
    }
    assert.fail('the pages never ended');
  }

  test('GET /approvals answers a page, with nextCursor while more follow; following it lists each approval once, in order', async (t) => {
    t.after(() => close());
    const first = await list('?state=all&limit=50');
    assert.equal(first.status, 200);
    assert.equal(first.approvals.length, 50);
    assert.equal(typeof first.nextCursor, 'string');
    // Without a limit: the default page, not everything.
    const unbounded = await list('');
    assert.equal(unbounded.approvals.length, 100);
    assert.equal(typeof unbounded.nextCursor, 'string');

    const every = await all('all', 50);
    assert.deepEqual(every.map((a) => a.id).sort(), [...opened].sort(), 'each approval once, no pin');
    for (let i = 1; i < every.length; i++) assert.ok(every[i - 1]!.createdAt <= every[i]!.createdAt, 'oldest first');
    const pending = await all('pending', 64);
    assert.equal(pending.length, TOTAL - rejected.size);
    assert.ok(pending.every((a) => a.state === 'pending' && !rejected.has(a.id)));
    const refused = await all('rejected', 7);
    assert.deepEqual(refused.map((a) => a.id).sort(), [...rejected].sort());
    // The last page of an exact multiple says the end, or gives one more, empty, page: never a loop.
    assert.equal((await all('all', TOTAL)).length, TOTAL);
  });

  test('pending approvals are paged from the pending ones alone: decided ones before them take no room', async (t) => {
    t.after(() => close());
    // The store's own page of pending approvals: none of the rejected, however many come first.
    const seen: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 50; pages++) {
      const page = await store.listApprovalPage(after, 16, true);
      assert.ok(page.items.length <= 16);
      for (const item of page.items) seen.push((JSON.parse(item.doc) as { id: string }).id);
      if (page.next === undefined) break;
      after = page.next;
    }
    assert.deepEqual([...seen].sort(), opened.filter((id) => !rejected.has(id)).sort());
    // The first store page of everything starts with a rejected one; of pending ones, never.
    assert.ok(rejected.has((JSON.parse((await store.listApprovalPage(undefined, 1)).items[0]!.doc) as { id: string }).id));
    assert.ok(!rejected.has((JSON.parse((await store.listApprovalPage(undefined, 1, true)).items[0]!.doc) as { id: string }).id));
  });

  test('a limit outside 1..500 or a cursor this API did not give is 400, saying which', async (t) => {
    t.after(() => close());
    for (const query of ['?limit=0', '?limit=501', '?limit=ten', '?limit=-1', '?cursor=not-a-cursor', `?cursor=${Buffer.from('../../etc').toString('base64url')}`, '?cursor=']) {
      const page = await list(query);
      assert.equal(page.status, 400, `${query}: ${JSON.stringify(page).slice(0, 300)}`);
      assert.equal(page.error?.code, 'bad_request');
      assert.match(page.error?.message ?? '', query.includes('limit') ? /limit must be a whole number from 1 to 500/ : /cursor/);
    }
    assert.equal((await list('?limit=500')).approvals.length, TOTAL);
  });

  test('gatehouse approvals list follows the pages; so does the inbox page', async (t) => {
    t.after(() => close());
    const env = { ...process.env, GATEHOUSE_ADMIN_URL: url, GATEHOUSE_ADMIN_TOKEN: TOKEN };
    const listed = await runCli(['approvals', 'list', '--json'], { env });
    assert.equal(listed.code, 0, listed.stderr);
    const ids = listed.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id);
    assert.equal(ids.length, TOTAL - rejected.size, 'every pending approval, past the first page');
    assert.equal(new Set(ids).size, ids.length);
    const table = await runCli(['approvals', 'list', '--state', 'all'], { env });
    assert.equal(table.code, 0, table.stderr);
    assert.equal(table.stdout.trim().split('\n').length, TOTAL + 1, 'a header and every approval');

    // The inbox: signed in with the token, a page of pending calls and a link to the next.
    const login = await request(`${url}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `credential=${TOKEN}` });
    await login.body.dump();
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    const seen = new Set<string>();
    let path: string | undefined = '/';
    for (let pages = 0; path !== undefined && pages < 10; pages++) {
      const res: Dispatcher.ResponseData = await request(`${url}${path}`, { headers: { cookie } });
      const html = await res.body.text();
      assert.equal(res.statusCode, 200);
      const rows = [...html.matchAll(/data-approval="(ap_[0-9a-f]{24})"/g)].map((m) => m[1]!);
      assert.ok(rows.length <= 100, `${rows.length} rows on one page`);
      for (const id of rows) seen.add(id);
      path = /<a id="more" href="([^"]+)"/.exec(html)?.[1]?.replaceAll('&amp;', '&');
    }
    assert.equal(seen.size, TOTAL - rejected.size);
    // A link cut short shows the first page (the page only reads), not an error.
    const cut = await request(`${url}/?cursor=AAAA`, { headers: { cookie } });
    const cutHtml = await cut.body.text();
    assert.equal(cut.statusCode, 200);
    assert.equal([...cutHtml.matchAll(/data-approval="/g)].length, 100);
    assert.doesNotMatch(cutHtml, /id="first"/);
  });
});
