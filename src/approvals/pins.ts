// Tool-contract pinning (tools.pinning): a defence against a server that changes a tool after it was
// trusted. The first definition Gatehouse sees of each tool (name, title, description, schemas,
// annotations) is pinned in the store, shared by replicas. A call whose route carries another definition
// is a change: `warn` logs it once and lets the call run; `enforce` refuses it with `tool_changed` until a
// reviewer accepts the new definition (admin API, CLI or inbox page), which then becomes the pin.
//
// A per-process cache remembers definitions found equal to their pin, so an unchanged tool costs a map
// lookup per call; a changed one reads the store each call, so an acceptance on any replica applies at once.

import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger.js';
import type { Route } from '../pipeline/context.js';
import type { AuditEntry } from '../store/store.js';

/** Pins never expire on their own (ten years); the store needs a lifetime. */
const PIN_TTL_MS = 10 * 365 * 86_400_000;
const PIN_PREFIX = 'pin:';
const MAX_CACHED = 10_000;

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
}

export interface PinStore {
  put(id: string, doc: string, ttlMs: number): Promise<void>;
  get(id: string): Promise<string | undefined>;
  list(): Promise<string[]>;
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
  ) {}

  /** The usual case, answered without the store: this process already found this definition equal to its pin. */
  isConfirmed(route: Route): boolean {
    return route.definitionSha256 !== undefined && this.confirmed.get(route.ref) === route.definitionSha256;
  }

  /** Whether the route's definition is the pinned one; pins it when the tool was never seen. */
  async check(route: Route): Promise<PinVerdict> {
    const digest = route.definitionSha256;
    if (digest === undefined || route.definition === undefined) return { ok: true };
    if (this.confirmed.get(route.ref) === digest) return { ok: true };
    const pin = await this.get(route.ref);
    const now = Date.now();
    if (pin === undefined) {
      await this.save({ kind: 'pin', ref: route.ref, pinned: { sha256: digest, definition: route.definition, at: now } });
      this.confirm(route.ref, digest);
      return { ok: true };
    }
    if (pin.pinned.sha256 === digest) {
      this.confirm(route.ref, digest);
      return { ok: true };
    }
    if (pin.changed?.sha256 !== digest) {
      pin.changed = { sha256: digest, definition: route.definition, at: now };
      await this.save(pin);
    }
    const key = `${route.ref}\u0000${digest}`;
    if (!this.reported.has(key)) {
      if (this.reported.size >= MAX_CACHED) this.reported.clear();
      this.reported.add(key);
      this.log.warn('a pinned tool changed its definition', { ref: route.ref, pinned: pin.pinned.sha256.slice(0, 16), now: digest.slice(0, 16), changes: diffDefinitions(pin.pinned.definition, route.definition).map((c) => c.path) });
      this.events.changed?.(route.ref);
    }
    return { ok: false, pin };
  }

  async get(ref: string): Promise<Pin | undefined> {
    const doc = parse(await this.store.get(PIN_PREFIX + ref));
    return isPin(doc) ? doc : undefined;
  }

  async list(): Promise<Pin[]> {
    return (await this.store.list()).map(parse).filter(isPin);
  }

  /** A reviewer accepts the changed definition (the one with `sha256`, when given): it becomes the pin. */
  async accept(ref: string, by: string, sha256: string | undefined): Promise<{ ok: true; pin: Pin } | { ok: false; status: 404 | 409; message: string }> {
    const pin = await this.get(ref);
    if (pin === undefined) return { ok: false, status: 404, message: `No tool "${ref}" is pinned` };
    if (pin.changed === undefined) return { ok: false, status: 409, message: `"${ref}" has not changed since it was pinned; there is nothing to accept` };
    if (sha256 !== undefined && sha256 !== pin.changed.sha256) return { ok: false, status: 409, message: `"${ref}" changed again since you looked (now ${pin.changed.sha256.slice(0, 16)}…); review the new change` };
    const accepted: Pin = { kind: 'pin', ref, pinned: { ...pin.changed, acceptedBy: by } };
    await this.store.audit({
      time: new Date().toISOString(),
      callId: randomUUID(),
      runId: randomUUID(),
      subject: by,
      toolRef: ref,
      upstream: ref.slice(0, ref.indexOf('/')),
      method: 'pin',
      outcome: 'accepted',
      latencyMs: 0,
      reviewer: by,
      reason: `definition ${pin.pinned.sha256} replaced by ${pin.changed.sha256}`,
    });
    await this.save(accepted);
    this.confirm(ref, accepted.pinned.sha256);
    return { ok: true, pin: accepted };
  }

  private save(pin: Pin): Promise<void> {
    return this.store.put(PIN_PREFIX + pin.ref, JSON.stringify(pin), PIN_TTL_MS);
  }

  private confirm(ref: string, digest: string): void {
    if (this.confirmed.size >= MAX_CACHED) this.confirmed.clear();
    this.confirmed.set(ref, digest);
  }
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

function parse(doc: string | undefined): unknown {
  if (doc === undefined) return undefined;
  try {
    return JSON.parse(doc) as unknown;
  } catch {
    return undefined;
  }
}
