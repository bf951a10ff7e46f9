// The inbox page's changed tools a page at a time (README §Approvals and tool pinning, the inbox page), as
// GET /pins gives them. Until 5 December each load of the page read every pin in the store (PinDesk.list)
// to show the few that changed: with thousands of tools, every reviewer's reload read them all. Now a load
// reads the store's pages of pins in bounded steps until it has a page of changed tools (25), and a
// "More changed tools" link (`pins=`) leads on from there, keeping the pending calls' place; a link cut
// short shows the first page. Real SQLite store, the real admin listener, a real browser session (login
// form, cookie) over HTTP.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { inboxCookie } from '../helpers/inbox-session.js';
import { pinAndChange, startPinAdmin, type PinAdmin } from '../helpers/pin-admin.js';
import { pinStoreOver } from '../helpers/pin-store.js';

const TOKEN = 'admin-token-for-inbox-pin-pages';
/** The changed tools, by ref: every third of 90 pinned, 30 in all. */
let CHANGED: string[];

let dir: string;
let admin: PinAdmin;
/** How many pins the admin API read by pages (the pin book's store port has no read of them all at once). */
const reads = { paged: 0 };
let cookie: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-inbox-pin-pages-'));
  admin = await startPinAdmin(new SqliteStore(join(dir, 'gatehouse.db')), TOKEN, (s) => ({
    ...pinStoreOver(s),
    page: async (after, limit) => {
      const page = await s.listPinPage(after, limit);
      reads.paged += page.items.length;
      return page;
    },
  }));
  CHANGED = await pinAndChange(admin.pins, 90, 3);
  cookie = await inboxCookie(admin.url, TOKEN);
});
after(async () => {
  await admin?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The inbox at `path`: the changed tools shown, and the pins pager's links (decoded hrefs). */
async function inbox(path: string): Promise<{ refs: string[]; more?: string; first?: string; html: string }> {
  const res = await request(`${admin.url}${path}`, { headers: { cookie } });
  const html = await res.body.text();
  assert.equal(res.statusCode, 200, html.slice(0, 300));
  const link = (id: string) => new RegExp(`<a id="${id}" href="([^"]+)"`).exec(html)?.[1]?.replace(/&amp;/g, '&');
  const more = link('pins-more');
  const first = link('pins-first');
  return { refs: [...html.matchAll(/data-pin="([^"]+)"/g)].map((m) => m[1]!), html, ...(more !== undefined ? { more } : {}), ...(first !== undefined ? { first } : {}) };
}

test('a load shows one page of changed tools (25), by ref, and links to the next; following it shows the rest once, every pin read by pages', async () => {
  reads.paged = 0;
  const first = await inbox('/');
  assert.deepEqual(first.refs, CHANGED.slice(0, 25));
  assert.equal(first.first, undefined, 'no link back on the first page');
  assert.match(first.more ?? '', /^\/\?pins=[A-Za-z0-9_-]+$/);
  const second = await inbox(first.more!);
  assert.deepEqual(second.refs, CHANGED.slice(25));
  assert.equal(second.more, undefined, 'the last page');
  assert.equal(second.first, '/');
  assert.ok(reads.paged > 0, 'the store was read by pages');
});

test('a pins link cut short (not a cursor this API gave) shows the first page, as a pending-calls one does', async () => {
  const cursor = (await inbox('/')).more!.slice('/?pins='.length);
  const cut = await inbox(`/?pins=${cursor}!`);
  assert.deepEqual(cut.refs, CHANGED.slice(0, 25));
  assert.match(cut.html, /id="pins-more"/);
  assert.doesNotMatch(cut.html, /id="pins-first"/);
});

test('accepting from the second page works as from the first, and the accepted tool leaves the pages', async () => {
  const second = await inbox((await inbox('/')).more!);
  const ref = second.refs[0]!;
  const digest = new RegExp(`data-pin="${ref}" data-digest="([0-9a-f]{64})"`).exec(second.html)?.[1];
  assert.ok(digest, 'the section carries the digest shown');
  const accepted = await request(`${admin.url}/pins/${encodeURIComponent(ref)}/accept`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ digest }) });
  assert.equal(accepted.statusCode, 200, await accepted.body.text());
  const all = [...(await inbox('/')).refs, ...(await inbox((await inbox('/')).more!)).refs];
  assert.deepEqual(all, CHANGED.filter((r) => r !== ref));
});
