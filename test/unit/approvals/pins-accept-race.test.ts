// Accepting a changed tool (README "Tool pinning"; GATEWAY-REQUIREMENTS: every decision audited) on a real
// SQLite store shared by two PinBooks, as two replicas share one store. Before, accept() wrote its
// "accepted" audit record and then saved the new pin, with nothing stopping a check() that had read the pin
// earlier from saving its own copy afterwards: the acceptance was lost (calls stayed refused, failing
// closed) while the audit said "accepted"; and a save that failed after the record left the same lie.
// Now a pin is written only under a lock in the store, the acceptance is saved (not yet in effect) before
// it is audited, and takes effect only once its record is written. The interleavings are placed by gates
// in the store's path, never by timing.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PinBook, type PinStore } from '../../../src/approvals/pins.js';
import { createLogger } from '../../../src/log/logger.js';
import type { Route } from '../../../src/pipeline/context.js';
import { openStore } from '../../../src/store/open-store.js';
import type { AuditEntry, Store } from '../../../src/store/store.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

/** The store of the scenarios running now: SQLite (one process), then Redis (replicas). */
let store: Store;

/** A gate an operation waits at: `reached` resolves when it gets there, `open()` lets it on. */
interface Gate {
  reached: Promise<void>;
  open(): void;
}
function gate(): Gate & { arrive(): Promise<void> } {
  let arrived!: () => void;
  let opened!: () => void;
  const reached = new Promise<void>((r) => (arrived = r));
  const open = new Promise<void>((r) => (opened = r));
  return { reached, open: () => opened(), arrive: () => (arrived(), open) };
}

type Op = 'get' | 'put' | 'audit' | 'claim';
/**
 * One replica's view of the shared store, as approvalStore() in src/gateway.ts makes it. `hold(op, when)`
 * stops the next such operation that `when` picks (after a get has read, before a put or an audit is
 * written, before a claim); `fail(op, when)` makes it throw instead.
 */
function replica() {
  const holds: Array<{ op: Op; when: (arg: string) => boolean; g: ReturnType<typeof gate> }> = [];
  const fails: Array<{ op: Op; when: (arg: string) => boolean }> = [];
  const audits: AuditEntry[] = [];
  const at = async (op: Op, arg: string): Promise<void> => {
    if (fails.some((f) => f.op === op && f.when(arg))) throw new Error(`store refused ${op}`);
    const i = holds.findIndex((h) => h.op === op && h.when(arg));
    if (i >= 0) await holds.splice(i, 1)[0]!.g.arrive();
  };
  const pinStore: PinStore = {
    get: async (id) => {
      const doc = await store.getApproval(id);
      await at('get', id);
      return doc;
    },
    put: async (id, doc, ttlMs) => {
      await at('put', doc);
      await store.putPin(id, doc, ttlMs);
    },
    page: (after, limit) => store.listPinPage(after, limit),
    scan: (cursor, count) => store.scanApprovals(cursor, count),
    unindexedSince: (since) => store.unindexedPins(since),
    index: (id) => store.indexPin(id),
    audit: async (entry) => {
      await at('audit', entry.outcome);
      audits.push(entry);
      return store.appendAudit(entry);
    },
    claim: async (key, digest, owner, leaseMs, ttlMs) => {
      await at('claim', key);
      return store.claimIdempotency(key, digest, owner, leaseMs, ttlMs);
    },
    read: (key) => store.readIdempotency(key),
    release: (key, owner) => store.releaseIdempotency(key, owner),
    complete: (key, owner, response, ttlMs) => store.completeIdempotency(key, owner, response, ttlMs),
  };
  const book = new PinBook(pinStore, createLogger('error', () => {}));
  return {
    book,
    audits,
    hold(op: Op, when: (arg: string) => boolean = () => true): Gate {
      const g = gate();
      holds.push({ op, when, g });
      return g;
    },
    fail(op: Op, when: (arg: string) => boolean = () => true): void {
      fails.push({ op, when });
    },
  };
}

const sha = (d: unknown) => createHash('sha256').update(JSON.stringify(d)).digest('hex');
/** A tool of its own for each test (the store is shared), in the definition `version`. */
function tool() {
  const ref = `up/lookup-${randomUUID()}`;
  return (version: string): Route => {
    const definition = { name: ref, description: `Looks an item up (${version})` };
    return { kind: 'tools', ref, publicName: 'lookup', original: 'lookup', upstream: 'up', listed: true, params: [], definition, definitionSha256: sha(definition) };
  };
}
const accepted = async (ref: string) => (await store.readAudit({})).filter((r) => r.toolRef === ref && r.method === 'pin' && r.outcome === 'accepted');

for (const kind of ['sqlite', 'redis'] as const) describe(`on ${kind}`, () => {
  let redis: TestRedis | undefined;
  before(async () => {
    if (kind === 'sqlite') store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'gatehouse-pin-race-')), 'gatehouse.db'));
    else {
      redis = await startRedis();
      store = openStore({ kind: 'redis', url: redis.url, keyPrefix: 'pin-race:', commandTimeoutMs: 2_000 } as Parameters<typeof openStore>[0]);
    }
  });
  after(async () => {
    await store.close();
    await redis?.stop();
  });

  describe(`PinBook.accept against a concurrent check (${kind})`, () => {
    it("a check that read the pin before an acceptance cannot save its stale copy over it: the acceptance is kept, as audited", async () => {
      const def = tool();
      const r1 = replica();
      const r2 = replica();
      assert.deepEqual(await r1.book.check(def('v1')), { ok: true }, 'v1 pinned');
      // Replica 2 sees v2 for the first time and reads the pin (v1, no change recorded yet); it is held there.
      const readV1 = r2.hold('get');
      const r2check = r2.book.check(def('v2'));
      await readV1.reached;
      // Replica 1 records the change, and a reviewer accepts it there.
      assert.equal((await r1.book.check(def('v2'))).ok, false, 'v2 is a change');
      const result = await r1.book.accept(def('v2').ref, 'reviewer', def('v2').definitionSha256!);
      assert.equal(result.ok, true, JSON.stringify(result));
      // Replica 2 goes on with what it read before the acceptance.
      readV1.open();
      assert.deepEqual(await r2check, { ok: true }, 'replica 2 finds v2 accepted, not a change to record');

      const pin = await r1.book.get(def('v2').ref);
      assert.equal(pin?.pinned.sha256, def('v2').definitionSha256, 'the accepted definition is the pin');
      assert.equal(pin?.changed, undefined);
      assert.equal((await accepted(def('v2').ref)).length, 1, 'audited once');
      assert.deepEqual(await replica().book.check(def('v2')), { ok: true }, 'a replica that never saw it runs v2');
    });

    it('an acceptance waits for a check saving the pin, then finds the change the check saved: nothing accepted unseen, nothing lost', async () => {
      const def = tool();
      const r1 = replica();
      const r2 = replica();
      await r1.book.check(def('v1'));
      assert.equal((await r1.book.check(def('v2'))).ok, false);
      // Replica 2 sees v3 and is held as it saves it as the change.
      const savingV3 = r2.hold('put', (doc) => doc.includes(def('v3').definitionSha256!));
      const r2check = r2.book.check(def('v3'));
      await savingV3.reached;
      // The reviewer accepts v2, as shown; the acceptance tries the pin while replica 2 is saving it.
      const triedLock = r1.hold('claim', (key) => key.includes(def('v2').ref));
      const acceptance = r1.book.accept(def('v2').ref, 'reviewer', def('v2').definitionSha256!);
      await Promise.race([triedLock.reached, acceptance]);
      triedLock.open();
      savingV3.open();
      assert.equal((await r2check).ok, false);
      const result = await acceptance;
      assert.equal(result.ok, false, 'v2 is no longer the change: v3 is');
      assert.equal(!result.ok && result.status, 409);
      const pin = await r1.book.get(def('v2').ref);
      assert.equal(pin?.pinned.sha256, def('v1').definitionSha256, 'v1 stays the pin');
      assert.equal(pin?.changed?.sha256, def('v3').definitionSha256, 'and v3 is shown as the change');
      assert.equal((await accepted(def('v2').ref)).length, 0, 'no "accepted" record for what was not kept');
    });

    it('while an acceptance is being audited it is not in effect, and a check neither runs the new definition nor saves over it', async () => {
      const def = tool();
      const r1 = replica();
      const r2 = replica();
      await r1.book.check(def('v1'));
      await r1.book.check(def('v2'));
      const auditing = r1.hold('audit', (outcome) => outcome === 'accepted');
      const acceptance = r1.book.accept(def('v2').ref, 'reviewer', def('v2').definitionSha256!);
      await auditing.reached;
      // Saved, not yet audited: still the change it was, everywhere.
      assert.equal((await r2.book.check(def('v2'))).ok, false, 'not run before its record is written');
      assert.equal((await r2.book.check(def('v3'))).ok, false, 'another change is refused, and not saved over the acceptance');
      auditing.open();
      assert.equal((await acceptance).ok, true);
      assert.deepEqual(await replica().book.check(def('v2')), { ok: true });
      assert.equal((await r1.book.get(def('v2').ref))?.pinned.sha256, def('v2').definitionSha256!);
    });
  });

  describe(`PinBook.accept when the store fails (${kind})`, () => {
    it('an acceptance the store cannot save is not audited: no "accepted" record for a pin that did not change', async () => {
      const def = tool();
      const r1 = replica();
      await r1.book.check(def('v1'));
      await r1.book.check(def('v2'));
      r1.fail('put', (doc) => doc.includes('"acceptedBy"'));
      await assert.rejects(r1.book.accept(def('v2').ref, 'reviewer', def('v2').definitionSha256!), /store refused put/);
      assert.equal((await accepted(def('v2').ref)).length, 0);
      assert.equal((await replica().book.check(def('v2'))).ok, false, 'v2 is still a change');
    });

    it('an acceptance whose record cannot be written does not take effect', async () => {
      const def = tool();
      const r1 = replica();
      await r1.book.check(def('v1'));
      await r1.book.check(def('v2'));
      r1.fail('audit', (outcome) => outcome === 'accepted');
      await assert.rejects(r1.book.accept(def('v2').ref, 'reviewer', def('v2').definitionSha256!), /store refused audit/);
      assert.equal((await replica().book.check(def('v2'))).ok, false, 'v2 is still a change');
      assert.equal((await r1.book.check(def('v2'))).ok, false, 'on the replica that tried too');
      // And a later acceptance, the store well again, goes through.
      const r3 = replica();
      assert.equal((await r3.book.accept(def('v2').ref, 'reviewer', def('v2').definitionSha256!)).ok, true);
      assert.deepEqual(await replica().book.check(def('v2')), { ok: true });
      assert.equal((await accepted(def('v2').ref)).length, 1);
    });

    it('a pin lock left by a replica that died is free again after its lease', async () => {
      const def = tool();
      const r1 = replica();
      await r1.book.check(def('v1'));
      await r1.book.check(def('v2'));
      // A dead replica's lock: claimed with a lease already over.
      await store.claimIdempotency(`pin-lock:${def('v2').ref}`, 'lock', 'dead-replica', 1, 1);
      await new Promise((r) => setTimeout(r, 5));
      assert.equal((await r1.book.accept(def('v2').ref, 'reviewer', def('v2').definitionSha256!)).ok, true);
    });
  });
});
