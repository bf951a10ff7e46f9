// Tool-contract pinning (tools.pinning): a defence against a server that changes a tool after it was
// trusted. The first definition Gatehouse sees of each tool (name, title, description, schemas,
// annotations) is pinned in the store, shared by replicas. A call whose route carries another definition
// is a change: `warn` logs it once and lets the call run; `enforce` refuses it with `tool_changed` until a
// reviewer accepts the new definition (admin API, CLI or inbox page), which then becomes the pin.
//
// A per-process cache remembers definitions found equal to their pin, so an unchanged tool costs a map
// lookup per call; a changed one reads the store each call, so an acceptance on any replica applies at once.
//
// A pin is written (first pinned, a change recorded, a change accepted) only under its lock in the store,
// after reading it again there: a writer that read it earlier, on any replica, cannot save its copy over
// another's write (a check doing so once undid an acceptance the audit had recorded).

import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger.js';
import type { Route } from '../pipeline/context.js';
import type { ApprovalPage } from '../store/approval-index.js';
import type { AuditEntry, IdempotencyRecord } from '../store/store.js';
import { BUSY, StoreLock, type LockStore } from './store-lock.js';
import { eachStored, parseStored as parse } from './stored-documents.js';

/** Pins never expire on their own (ten years); the store needs a lifetime. */
const PIN_TTL_MS = 10 * 365 * 86_400_000;
const PIN_PREFIX = 'pin:';
const LOCK_PREFIX = 'pin-lock:';
const ACCEPTED_PREFIX = 'pin-accepted:';
const MAX_CACHED = 10_000;
/**
 * A pin's writer holds its lock for a few store operations; one that dies holding it frees it after the
 * lease. A writer waits for another replica's lock up to tries × waitMs (about a second), then gives up:
 * a check then saves nothing and judges by what it read, an acceptance answers 409 (try again).
 */
const LOCK_TIMES = { leaseMs: 10_000, tries: 40, waitMs: 25 };

export interface PinnedDefinition {
  sha256: string;
  definition: Record<string, unknown>;
  at: number;
}

export interface Pin {
  kind: 'pin';
  ref: string;
  pinned: PinnedDefinition & { acceptedBy?: string };
  /** The definition the upstream serves now, when it differs from the pin. */
  changed?: PinnedDefinition;
  /**
   * `pinned` is an acceptance saved but not yet known to be audited, so not in effect: the pin reads as
   * `previous` with `pinned` as its change until the claim `slot` is done (marked once the record is written).
   */
  unaudited?: { slot: string; previous: Pin['pinned'] };
}

export interface PinStore extends LockStore {
  /** Stores a pin, kept in the set `list` reads. */
  put(id: string, doc: string, ttlMs: number): Promise<void>;
  get(id: string): Promise<string | undefined>;
  /** Up to `limit` pins' documents by id after the id `after` (Store.listPinPage). */
  page(after: string | undefined, limit: number): Promise<ApprovalPage>;
  /** Every document where pins live (approvals too), a slice at a time (Store.scanApprovals): by reindex, once per start. */
  scan(cursor: string | undefined, count: number): Promise<{ docs: string[]; next: string | undefined }>;
  /** Adds a pin stored before the pins' set existed to it. */
  index(id: string): Promise<void>;
  /** The ids of pins stored lately (since then) without their place in the set (Store.unindexedPins). */
  unindexedSince(since: number): Promise<string[]>;
  /** What holds a claim, if anything (an acceptance's slot). */
  read(key: string): Promise<IdempotencyRecord | undefined>;
  /** Marks a claim this owner holds as done; false when it is not the owner's. */
  complete(key: string, owner: string, response: string, ttlMs: number): Promise<boolean>;
  audit(entry: AuditEntry): Promise<unknown>;
}

export type PinVerdict = { ok: true } | { ok: false; pin: Pin };

export interface PinChange {
  path: string;
  before?: unknown;
  after?: unknown;
}

export class PinBook {
  /** ref → the definition digest last found equal to the pin. */
  private readonly confirmed = new Map<string, string>();
  /** `ref\0digest` of changes already logged by this process (warn logs each once). */
  private readonly reported = new Set<string>();

  constructor(
    private readonly store: PinStore,
    private readonly log: Logger,
    private readonly events: { changed?(ref: string): void } = {},
  ) {
    this.lock = new StoreLock(store, LOCK_TIMES);
  }

  private readonly lock: StoreLock;

  /** The usual case, answered without the store: this process already found this definition equal to its pin. */
  isConfirmed(route: Route): boolean {
    return route.definitionSha256 !== undefined && this.confirmed.get(route.ref) === route.definitionSha256;
  }

  /** Whether the route's definition is the pinned one; pins it when the tool was never seen. */
  async check(route: Route): Promise<PinVerdict> {
    const digest = route.definitionSha256;
    const definition = route.definition;
    if (digest === undefined || definition === undefined) return { ok: true };
    if (this.confirmed.get(route.ref) === digest) return { ok: true };
    let pin = await this.get(route.ref);
    if (needsWrite(pin, digest)) {
      // Read again under the lock: what was read above may be stale by now (an acceptance on another replica).
      const written = await this.lock.run(LOCK_PREFIX + route.ref, async () => {
        const current = await this.get(route.ref);
        if (!needsWrite(current, digest)) return current;
        const at = Date.now();
        const next: Pin = current === undefined ? { kind: 'pin', ref: route.ref, pinned: { sha256: digest, definition, at } } : { kind: 'pin', ref: route.ref, pinned: current.pinned, changed: { sha256: digest, definition, at } };
        await this.save(next);
        return next;
      });
      if (written !== BUSY) pin = written;
      // Another writer held the pin all along: nothing is saved, and the call is judged by what was read. A
      // tool never pinned has nothing to be judged by: the check fails (an enforce call is refused, retry later).
      else if (pin === undefined) throw new Error(`the pin of ${route.ref} is being written elsewhere; try again`);
    }
    if (pin === undefined || pin.pinned.sha256 === digest) {
      this.confirm(route.ref, digest);
      return { ok: true };
    }
    const key = `${route.ref}\u0000${digest}`;
    if (!this.reported.has(key)) {
      if (this.reported.size >= MAX_CACHED) this.reported.clear();
      this.reported.add(key);
      this.log.warn('a pinned tool changed its definition', { ref: route.ref, pinned: pin.pinned.sha256.slice(0, 16), now: digest.slice(0, 16), changes: diffDefinitions(pin.pinned.definition, definition).map((c) => c.path) });
      this.events.changed?.(route.ref);
    }
    return { ok: false, pin };
  }

  /** The pin of `ref` as in effect (an acceptance not yet audited is still a change). */
  async get(ref: string): Promise<Pin | undefined> {
    const doc = parse(await this.store.get(pinIdOf(ref)));
    return isPin(doc) ? this.inEffect(doc) : undefined;
  }

  /**
   * Up to `limit` pins by ref, after the place `after` (a previous page's `next`): GET /pins and the CLI. `next`
   * is where the next page starts, undefined at the end; a page may hold fewer than `limit` and still have one.
   */
  async page(after: string | undefined, limit: number): Promise<{ pins: Pin[]; next: string | undefined }> {
    const page = await this.store.page(after, limit);
    const pins = await Promise.all(page.items.map((i) => parse(i.doc)).filter(isPin).map((p) => this.inEffect(p)));
    return { pins, next: page.next };
  }

  /**
   * Adds the pins stored before the store kept a set of them (every document read once, a slice at a time)
   * to that set, so they are listed. Run once per start. Resolves with how many pins it saw.
   */
  reindex(): Promise<number> {
    return eachStored((cursor, count) => this.store.scan(cursor, count), isPin, (pin) => this.store.index(pinIdOf(pin.ref)));
  }

  /**
   * Adds the pins stored since `since` without their place in the set (by a replica still on an older
   * version, during a rolling upgrade, after this one's reindex) to it, so they are listed without waiting
   * for a restart. Run by the gateway's sweep each minute; reads only what was stored lately. Resolves with
   * how many it added.
   */
  async indexRecent(since: number): Promise<number> {
    const ids = await this.store.unindexedSince(since);
    for (const id of ids) await this.store.index(id);
    return ids.length;
  }

  /**
   * A reviewer accepts the changed definition with `sha256` (the one they reviewed): it becomes the pin. Under
   * the pin's lock, the acceptance is saved first, not yet in effect; then audited; then put in effect (its
   * slot marked done, and saved as the plain pin). A save that fails leaves no record; a record that fails
   * leaves no acceptance in effect; so the audit never says "accepted" of a pin that was not kept.
   */
  async accept(ref: string, by: string, sha256: string): Promise<{ ok: true; pin: Pin } | { ok: false; status: 404 | 409; message: string }> {
    const result = await this.lock.run(LOCK_PREFIX + ref, () => this.acceptLocked(ref, by, sha256));
    if (result === BUSY) return { ok: false, status: 409, message: `"${ref}" is being updated (its change recorded, or accepted elsewhere); look again and retry` };
    return result;
  }

  private async acceptLocked(ref: string, by: string, sha256: string): Promise<{ ok: true; pin: Pin } | { ok: false; status: 404 | 409; message: string }> {
    const pin = await this.get(ref);
    if (pin === undefined) return { ok: false, status: 404, message: `No tool "${ref}" is pinned` };
    if (pin.changed === undefined) return { ok: false, status: 409, message: `"${ref}" has not changed since it was pinned; there is nothing to accept` };
    if (sha256 !== pin.changed.sha256) return { ok: false, status: 409, message: `"${ref}" changed again since you looked (now ${pin.changed.sha256.slice(0, 16)}…); review the new change` };
    const accepted: Pin = { kind: 'pin', ref, pinned: { ...pin.changed, acceptedBy: by } };
    const owner = randomUUID();
    const slot = ACCEPTED_PREFIX + owner;
    if ((await this.store.claim(slot, accepted.pinned.sha256, owner, LOCK_TIMES.leaseMs, PIN_TTL_MS)).outcome !== 'claimed') throw new Error(`the acceptance of ${ref} could not be begun`);
    await this.save({ ...accepted, unaudited: { slot, previous: pin.pinned } });
    try {
      await this.store.audit(pinAuditEntry(ref, by, 'accepted', `definition ${pin.pinned.sha256} replaced by ${pin.changed.sha256}`));
    } catch (err) {
      // Not in effect without its record (the slot is never marked); the pin is put back as it was besides.
      await this.save(pin).catch(() => {});
      await this.store.release(slot, owner).catch(() => {});
      throw err;
    }
    // Recorded: the acceptance stands once either of these is done (readers apply a saved acceptance whose
    // slot is marked). Both failing leaves it not in effect after all, with its record: the one case left.
    const marked = await this.store.complete(slot, owner, 'audited', PIN_TTL_MS).catch(() => false);
    let saved = true;
    let failure: unknown;
    await this.save(accepted).catch((err: unknown) => {
      saved = false;
      failure = err;
    });
    if (!marked && !saved) throw failure;
    this.confirm(ref, accepted.pinned.sha256);
    return { ok: true, pin: accepted };
  }

  /**
   * Records an acceptance refused for who asked (tools.pinningReviewers: not among the reviewers of the tool),
   * as a refused approval decision is: outcome `refused`, refusal `forbidden`, the reviewer and the digest they
   * sent (undefined when they sent none that is one: who may accept is judged before what they sent). Written
   * before the refusal is answered (fail closed: a store that cannot take it answers an error).
   */
  async refused(ref: string, by: string, sha256: string | undefined): Promise<void> {
    const what = sha256 === undefined ? 'acceptance (no definition digest sent)' : `acceptance of definition ${sha256}`;
    await this.store.audit(pinAuditEntry(ref, by, 'refused', `${what} refused: not among the reviewers of this tool (tools.pinningReviewers)`));
  }

  /** A pin as in effect: an acceptance saved but not known to be audited reads as the change it accepts. */
  private async inEffect(pin: Pin): Promise<Pin> {
    if (pin.unaudited === undefined) return pin;
    const { slot, previous } = pin.unaudited;
    if ((await this.store.read(slot))?.state === 'done') return { kind: 'pin', ref: pin.ref, pinned: pin.pinned };
    const { acceptedBy: _, ...change } = pin.pinned;
    return { kind: 'pin', ref: pin.ref, pinned: previous, changed: change };
  }

  private save(pin: Pin): Promise<void> {
    return this.store.put(pinIdOf(pin.ref), JSON.stringify(pin), PIN_TTL_MS);
  }

  private confirm(ref: string, digest: string): void {
    if (this.confirmed.size >= MAX_CACHED) this.confirmed.clear();
    this.confirmed.set(ref, digest);
  }
}

/**
 * The audit record of a reviewer's act on the pin of `ref`: an acceptance, or one refused for who asked
 * (refusal `forbidden`, as a refused approval decision). The upstream is the ref's part before its first
 * `/`; a ref with none (a refused path names any string) names no upstream rather than a cut-off one.
 */
function pinAuditEntry(ref: string, by: string, outcome: 'accepted' | 'refused', reason: string): AuditEntry {
  const slash = ref.indexOf('/');
  return {
    time: new Date().toISOString(),
    callId: randomUUID(),
    runId: randomUUID(),
    subject: by,
    toolRef: ref,
    ...(slash > 0 ? { upstream: ref.slice(0, slash) } : {}),
    method: 'pin',
    outcome,
    ...(outcome === 'refused' ? { refusal: 'forbidden' } : {}),
    latencyMs: 0,
    reviewer: by,
    reason,
  };
}

/** The store id of the pin of `ref`: where GET /pins and the inbox page list on from after it. */
export function pinIdOf(ref: string): string {
  return PIN_PREFIX + ref;
}

/** Whether a check finding `pin` must write: to pin a tool never seen, or to record a change not recorded yet. */
function needsWrite(pin: Pin | undefined, digest: string): boolean {
  return pin === undefined || (pin.pinned.sha256 !== digest && pin.changed?.sha256 !== digest);
}

/** How a pin looks through the admin API: its state, and what changed, path by path. */
export function pinView(pin: Pin): Pin & { state: 'pinned' | 'changed'; changes: PinChange[] } {
  return { ...pin, state: pin.changed ? 'changed' : 'pinned', changes: pin.changed ? diffDefinitions(pin.pinned.definition, pin.changed.definition) : [] };
}

/** The differences between two JSON values, as JSON-pointer-like paths with the value on each side. */
export function diffDefinitions(before: unknown, after: unknown, path = ''): PinChange[] {
  if (Object.is(before, after)) return [];
  const bothObjects = typeof before === 'object' && before !== null && typeof after === 'object' && after !== null && Array.isArray(before) === Array.isArray(after);
  if (!bothObjects) return [{ path: path || '/', ...(before !== undefined ? { before } : {}), ...(after !== undefined ? { after } : {}) }];
  const b = before as Record<string, unknown>;
  const a = after as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(b), ...Object.keys(a)])].sort();
  return keys.flatMap((k) => diffDefinitions(b[k], a[k], `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`));
}

function isPin(doc: unknown): doc is Pin {
  return typeof doc === 'object' && doc !== null && (doc as Pin).kind === 'pin' && typeof (doc as Pin).ref === 'string';
}
