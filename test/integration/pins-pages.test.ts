// GET /pins a page at a time, as GET /approvals (README §Approvals and tool pinning, the admin API): `limit`
// (default 100, at most 500) and `cursor`, answered with `nextCursor` while more follow. It answered every
// pin in one body, each with its whole definition (schemas included) and, when changed, both definitions
// and their diff, however many tools the upstreams serve. `gatehouse pins list|show|accept` follow the
// pages. Real stores (SQLite and Redis), the real admin listener and the built CLI, with more pins than one
// page holds.

import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import type { Store } from '../../src/store/store.js';
import { onBothStores } from '../helpers/both-stores.js';
import { runCli } from '../helpers/cli.js';
import { startPinAdmin } from '../helpers/pin-admin.js';
import { toolRoute as routeOf } from '../helpers/pin-store.js';

const TOKEN = 'admin-token-for-pin-page-tests';
const TOTAL = 130;
/** Tool names that sort as their numbers do. */
const nameOf = (i: number) => `tool${String(i).padStart(3, '0')}`;

interface Listed {
  status: number;
  pins: Array<{ ref: string; state: string; changed?: { sha256: string } }>;
  nextCursor?: string;
  error?: { code: string; message: string };
}

onBothStores({ tmpPrefix: 'gatehouse-pin-pages-', keyPrefix: 'pin-pages:' }, (open, reset) => {
  let store: Store;
  let url: string;
  let close: () => Promise<void>;
  beforeEach(async () => {
    await reset();
    store = open();
    const admin = await startPinAdmin(store, TOKEN);
    for (let i = 0; i < TOTAL; i++) assert.deepEqual(await admin.pins.check(routeOf(nameOf(i), 'v1')), { ok: true });
    // The last tool changed: its change is past the first page.
    assert.equal((await admin.pins.check(routeOf(nameOf(TOTAL - 1), 'v2'))).ok, false);
    url = admin.url;
    close = admin.close;
  });

  async function list(query: string): Promise<Listed> {
    const res = await request(`${url}/pins${query}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const json = (await res.body.json()) as Omit<Listed, 'status'>;
    return { status: res.statusCode, ...json };
  }

  test('GET /pins answers a page (100 by default), with nextCursor while more follow; following it lists each pin once, by ref', async (t) => {
    t.after(() => close());
    const first = await list('');
    assert.equal(first.status, 200);
    assert.equal(first.pins.length, 100, 'the default page, not every pin');
    assert.equal(typeof first.nextCursor, 'string');
    for (const limit of [1, 7, 50, TOTAL, 500]) {
      const found: Listed['pins'] = [];
      let cursor: string | undefined;
      let pages = 0;
      for (; pages < 200; pages++) {
        const page = await list(`?limit=${limit}${cursor !== undefined ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        assert.equal(page.status, 200, JSON.stringify(page).slice(0, 300));
        assert.ok(page.pins.length <= limit);
        found.push(...page.pins);
        if (page.nextCursor === undefined) break;
        cursor = page.nextCursor;
      }
      assert.ok(pages < 200, 'the pages ended');
      assert.deepEqual(found.map((p) => p.ref), Array.from({ length: TOTAL }, (_, i) => `up/${nameOf(i)}`), `limit ${limit}: each pin once, in order`);
      assert.equal(found.filter((p) => p.state === 'changed').length, 1);
    }
  });

  test('a limit outside 1..500 or a cursor this API did not give is 400, saying which', async (t) => {
    t.after(() => close());
    for (const query of ['?limit=0', '?limit=501', '?limit=ten', '?cursor=not-a-cursor!', `?cursor=${Buffer.from('ap_0:x').toString('base64url')}`, '?cursor=']) {
      const page = await list(query);
      assert.equal(page.status, 400, `${query}: ${JSON.stringify(page).slice(0, 300)}`);
      assert.equal(page.error?.code, 'bad_request');
      assert.match(page.error?.message ?? '', query.includes('limit') ? /limit must be a whole number from 1 to 500/ : /cursor/);
    }
  });

  test('gatehouse pins list, show and accept follow the pages', async (t) => {
    t.after(() => close());
    const env = { ...process.env, GATEHOUSE_ADMIN_URL: url, GATEHOUSE_ADMIN_TOKEN: TOKEN };
    const listed = await runCli(['pins', 'list', '--all', '--json'], { env });
    assert.equal(listed.code, 0, listed.stderr);
    const refs = listed.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { ref: string }).ref);
    assert.equal(refs.length, TOTAL, 'every pin, past the first page');
    assert.equal(new Set(refs).size, TOTAL);
    const changed = await runCli(['pins', 'list'], { env });
    assert.equal(changed.code, 0, changed.stderr);
    assert.match(changed.stdout, new RegExp(`up/${nameOf(TOTAL - 1)}\\s+changed`));
    const last = `up/${nameOf(TOTAL - 1)}`;
    const shown = await runCli(['pins', 'show', last], { env });
    assert.equal(shown.code, 0, shown.stderr);
    const digest = /now:\s+([0-9a-f]{64})/.exec(shown.stdout)?.[1];
    assert.ok(digest, shown.stdout);
    const accepted = await runCli(['pins', 'accept', last, '--digest', digest], { env });
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.equal((await list('?limit=500')).pins.find((p) => p.ref === last)?.state, 'pinned');
  });
});
