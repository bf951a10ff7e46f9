// Listing the pins (GET /pins, `gatehouse pins list|show|accept`, and the inbox page, which shows the
// changed tools; README §Approvals and tool pinning) reads the pins through the store's set of
// them, not every document under `{approvals}`: pins live there beside every caller's approvals (kept a
// week past their deadlines), their binding pointers and continuations, and each list once read and parsed
// all of them to keep the pins. Pins stored before the set existed are added to it once (reindex). Both
// real stores.

import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { PinBook, type PinStore } from '../../src/approvals/pins.js';
import { createLogger } from '../../src/log/logger.js';
import type { Store } from '../../src/store/store.js';
import { onBothStores } from '../helpers/both-stores.js';
import { pinStoreOver, toolRoute as routeOf } from '../helpers/pin-store.js';

const sha = (v: unknown) => createHash('sha256').update(JSON.stringify(v)).digest('hex');

onBothStores({ tmpPrefix: 'gatehouse-pins-list-', keyPrefix: 'pins-list:' }, (open, reset) => {
  let store: Store;
  let wholeReads: number;
  let book: PinBook;
  beforeEach(async () => {
    await reset();
    store = open();
    wholeReads = 0;
    // Each reindex scans from the start once: counted as one read of every document.
    const port: PinStore = { ...pinStoreOver(store), scan: (cursor, count) => (cursor === undefined && wholeReads++, store.scanApprovals(cursor, count)) };
    book = new PinBook(port, createLogger('error', () => {}));
  });
  /** Every pin, as GET /pins lists them (one page holds them all here). */
  const listed = async () => (await book.page(undefined, 500)).pins;

  test('the pins are listed from their own set: every pin, no approval, and no whole-store read', async (t) => {
    t.after(() => store.close());
    for (let i = 0; i < 12; i++) assert.deepEqual(await book.check(routeOf(`tool${i}`, 'v1')), { ok: true });
    // A change is recorded on the pin (saved again), and shows as such.
    assert.equal((await book.check(routeOf('tool3', 'v2'))).ok, false);
    // Many other documents live beside them.
    for (let i = 0; i < 300; i++) await store.putApproval(`ap_${String(i).padStart(24, '0')}`, JSON.stringify({ id: `ap_${i}`, binding: `b${i}` }), 600_000);
    for (let i = 0; i < 300; i++) await store.putApproval(`binding:${i}`, JSON.stringify({ generation: 0 }), 600_000);
    const pins = await listed();
    assert.deepEqual(pins.map((p) => p.ref).sort(), Array.from({ length: 12 }, (_, i) => `up/tool${i}`).sort());
    assert.equal(pins.find((p) => p.ref === 'up/tool3')?.changed?.definition.description, 'v2');
    assert.equal(wholeReads, 0, 'no list of the pins read every document');
    // Accepting the change keeps the pin listed, as accepted.
    const accepted = await book.accept('up/tool3', 'reviewer', sha({ name: 'tool3', description: 'v2' }));
    assert.equal(accepted.ok, true);
    assert.equal((await listed()).find((p) => p.ref === 'up/tool3')?.changed, undefined);
    assert.equal(wholeReads, 0);
  });

  test('pins stored before the set existed are added to it by reindex', async (t) => {
    t.after(() => store.close());
    assert.deepEqual(await book.check(routeOf('fresh', 'v1')), { ok: true });
    // As an older Gatehouse stored them: the document alone, as any other under {approvals}.
    const old = { kind: 'pin', ref: 'up/old', pinned: { sha256: sha({ name: 'old', description: 'v1' }), definition: { name: 'old', description: 'v1' }, at: Date.now() } };
    await store.putApproval('pin:up/old', JSON.stringify(old), 600_000);
    assert.deepEqual((await listed()).map((p) => p.ref), ['up/fresh']);
    assert.equal(await book.reindex(), 2);
    assert.deepEqual((await listed()).map((p) => p.ref).sort(), ['up/fresh', 'up/old']);
    assert.equal(wholeReads, 1, 'only reindex read every document');
  });

  test('a pin an older replica stores after this one started (mid-upgrade) is listed after the next sweep, not the next restart', async (t) => {
    t.after(() => store.close());
    assert.deepEqual(await book.check(routeOf('fresh', 'v1')), { ok: true });
    assert.equal(await book.reindex(), 1);
    // Then an older replica, still running, pins a tool it saw first: the document alone.
    const late = { kind: 'pin', ref: 'up/late', pinned: { sha256: sha({ name: 'late', description: 'v1' }), definition: { name: 'late', description: 'v1' }, at: Date.now() } };
    await store.putApproval('pin:up/late', JSON.stringify(late), 600_000);
    for (let i = 0; i < 50; i++) await store.putApproval(`binding:${i}`, JSON.stringify({ generation: 0 }), 600_000);
    assert.deepEqual((await listed()).map((p) => p.ref), ['up/fresh']);
    // What the gateway's sweep runs each minute: the pins put lately are added to the set, with no whole read.
    assert.equal(await book.indexRecent(Date.now() - 300_000), 1);
    assert.deepEqual((await listed()).map((p) => p.ref).sort(), ['up/fresh', 'up/late']);
    assert.equal(wholeReads, 1, 'only the start-up reindex read every document');
    // Already in the set: nothing more to add.
    assert.equal(await book.indexRecent(Date.now() - 300_000), 0);
  });
});
