// Legacy session ids are bearer-like handles: whoever presents one is served that session. Each id is
// bound to the Principal it was issued to, at the moment the answer that issues it passes through
// Gatehouse (2025-11-25 security best practices §Session Hijacking: bind sessions to the user). An id
// Gatehouse never saw issued is refused and never remembered, so nobody can claim an id in advance or
// flood the table to push a binding out; another caller presenting a bound id gets the same 404 as for
// an id that does not exist.

import { principalKey, type Principal } from '../pipeline/principal.js';

/** Why a binding ended; a late request from the owner learns it (404 `data.details.reason`). */
export type BindingEnd = 'idle_timeout' | 'session_cap' | 'client_closed' | 'unknown';

/** Admitted: the session's owner, with what its client declared at initialize (in 2026-07-28 terms). */
export type SessionAdmission = { ok: true; capabilities: Record<string, unknown> } | { ok: false; reason: BindingEnd };

interface Binding {
  owner: string;
  /** The owner's parts, compared on every request without building its key (principalKey). */
  via: string;
  tenant: string;
  subject: string;
  capabilities: Record<string, unknown>;
  /** The answer to every admitted request of the owner: made once, not per request. */
  admitted: SessionAdmission & { ok: true };
  lastUsed: number;
  /** Requests and streams open on the session now; a busy session never idles out. */
  inFlight: number;
}

const UNKNOWN: SessionAdmission = Object.freeze({ ok: false, reason: 'unknown' });

/** Ended ids remembered with their owner, oldest forgotten first, so the owner hears why. */
const TOMBSTONES = 10_000;

export class SessionBinding {
  private readonly live = new Map<string, Binding>();
  private readonly perOwner = new Map<string, number>();
  private readonly ended = new Map<string, { owner: string; reason: BindingEnd }>();
  private readonly sweeper: NodeJS.Timeout;
  /** Live bindings at most: past it, the least recently used one ends. */
  private readonly max: number;
  /** Live bindings one caller may hold: past it, that caller's own least recently used one ends. */
  private readonly maxPerOwner: number;

  constructor(private readonly limits: { max: number; idleTimeoutMs: number }, private readonly onEnd: (id: string, reason: BindingEnd) => void = () => {}) {
    this.max = Math.max(limits.max * 4, 1024);
    this.maxPerOwner = limits.max;
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, Math.max(1_000, limits.idleTimeoutMs / 4))).unref();
  }

  /** Live sessions: issued, not ended, used within the idle timeout. */
  get size(): number {
    return this.live.size;
  }

  /**
   * Binds a session id to the caller it was just issued to. An upstream that issues an id again has
   * started a new session under it: the new caller owns it from now on.
   */
  bind(id: string, principal: Principal, capabilities: Record<string, unknown> = {}): void {
    const owner = principalKey(principal);
    const previous = this.live.get(id);
    if (previous) this.release(id, previous);
    this.ended.delete(id);
    this.live.set(id, { owner, via: principal.via, tenant: principal.tenant ?? '', subject: principal.subject, capabilities, admitted: { ok: true, capabilities }, lastUsed: Date.now(), inFlight: 0 });
    this.perOwner.set(owner, (this.perOwner.get(owner) ?? 0) + 1);
    if ((this.perOwner.get(owner) ?? 0) > this.maxPerOwner) this.evictOldest(id, owner);
    if (this.live.size > this.max) this.evictOldest(id, undefined);
  }

  /**
   * Whether the caller may use the session now. Ids never issued, and ids bound to someone else, are
   * refused with reason `unknown`; the owner of an ended session hears why it ended.
   */
  admit(id: string, principal: Principal): SessionAdmission {
    const binding = this.live.get(id);
    if (binding) {
      // The same comparison as principalKey's, part by part (it runs on every legacy request).
      if (binding.subject !== principal.subject || binding.via !== principal.via || binding.tenant !== (principal.tenant ?? '')) return UNKNOWN;
      binding.lastUsed = Date.now();
      return binding.admitted;
    }
    const tomb = this.ended.get(id);
    return tomb !== undefined && tomb.owner === principalKey(principal) ? { ok: false, reason: tomb.reason } : UNKNOWN;
  }

  /** Marks a request or stream open on the session; the returned function marks it done. */
  enter(id: string): () => void {
    const binding = this.live.get(id);
    if (!binding) return noop;
    binding.inFlight++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      binding.inFlight--;
      binding.lastUsed = Date.now();
    };
  }

  /** Ends a binding (DELETE answered, the upstream no longer knows the id); a no-op for unbound ids. */
  end(id: string, reason: BindingEnd): void {
    const binding = this.live.get(id);
    if (!binding) return;
    this.release(id, binding);
    this.ended.set(id, { owner: binding.owner, reason });
    if (this.ended.size > TOMBSTONES) this.ended.delete(this.ended.keys().next().value!);
    this.onEnd(id, reason);
  }

  /** Ends the bindings idle past the timeout, with nothing in flight. */
  sweep(now = Date.now()): void {
    const cutoff = now - this.limits.idleTimeoutMs;
    for (const [id, b] of this.live) if (b.inFlight === 0 && b.lastUsed < cutoff) this.end(id, 'idle_timeout');
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  private release(id: string, binding: Binding): void {
    this.live.delete(id);
    const left = (this.perOwner.get(binding.owner) ?? 1) - 1;
    if (left <= 0) this.perOwner.delete(binding.owner);
    else this.perOwner.set(binding.owner, left);
  }

  /**
   * Ends the least recently used binding (of one owner, or of anyone) other than the one just made, like
   * the session tables' own cap. A session whose only activity is an old open stream counts as unused.
   */
  private evictOldest(keep: string, owner: string | undefined): void {
    let oldestId: string | undefined;
    let oldest = Infinity;
    for (const [id, b] of this.live) {
      if (id !== keep && (owner === undefined || b.owner === owner) && b.lastUsed < oldest) {
        oldest = b.lastUsed;
        oldestId = id;
      }
    }
    if (oldestId !== undefined) this.end(oldestId, 'session_cap');
  }
}

function noop(): void {}
