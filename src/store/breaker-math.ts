// A circuit breaker's state machine, as the SQLite store runs it (the Redis store runs the same in Lua,
// redis-store.ts). Closed: calls pass, outcomes are counted (consecutive failures, and calls and failures
// in a fixed window). Open: calls are refused until `openUntil`. Then one caller gets the probe (half-open)
// while the others are still refused; the probe's success closes the circuit, its failure reopens it. A
// probe that never reports (its process died) is given another after a cool-down.

import type { BreakerAdmission, BreakerSettings, BreakerState } from './store.js';

export interface BreakerDoc {
  state: BreakerState;
  consecutive: number;
  windowStart: number;
  calls: number;
  failures: number;
  /** Open: refused until then. Half-open: the probe's time is up then. */
  until: number;
}

/**
 * How long a breaker's state is kept after its last change: past that it is forgotten (closed, nothing
 * counted) on both stores, as a Redis key's TTL (the Lua's PX) and a SQLite row's expires_at.
 */
export function breakerLifetimeMs(s: BreakerSettings): number {
  return s.windowMs + s.coolDownMs + 60_000;
}

/** A breaker's state as a store keeps it: gone (as if closed and never used) from `expiresAt` on. */
export interface KeptBreaker {
  doc: BreakerDoc;
  expiresAt: number;
}

/** The state still kept at `now`, if any. */
export function liveBreaker(kept: KeptBreaker | undefined, now: number): BreakerDoc | undefined {
  return kept !== undefined && now < kept.expiresAt ? kept.doc : undefined;
}

const CLOSED = (now: number): BreakerDoc => ({ state: 'closed', consecutive: 0, windowStart: now, calls: 0, failures: 0, until: 0 });

export const nextBreaker = {
  admit(doc: BreakerDoc | undefined, now: number, s: BreakerSettings): { admission: BreakerAdmission; next: BreakerDoc | undefined } {
    if (doc === undefined || doc.state === 'closed') return { admission: { verdict: 'closed' }, next: doc };
    if (now < doc.until) return { admission: { verdict: 'open', retryAfterMs: doc.until - now }, next: doc };
    // The cool-down (or a silent probe's time) is over: this caller probes.
    return { admission: { verdict: 'probe' }, next: { ...doc, state: 'half_open', until: now + s.coolDownMs } };
  },

  record(doc: BreakerDoc | undefined, ok: boolean, now: number, s: BreakerSettings): BreakerDoc {
    const d = doc ?? CLOSED(now);
    if (d.state === 'half_open') return ok ? CLOSED(now) : { ...d, state: 'open', consecutive: d.consecutive + 1, until: now + s.coolDownMs };
    if (d.state === 'open') return d; // a late answer of a call let through before it opened
    const fresh = now - d.windowStart >= s.windowMs;
    const calls = (fresh ? 0 : d.calls) + 1;
    const failures = (fresh ? 0 : d.failures) + (ok ? 0 : 1);
    const consecutive = ok ? 0 : d.consecutive + 1;
    const tripped = consecutive >= s.consecutiveFailures || (s.errorRate !== undefined && calls >= s.minCalls && failures / calls >= s.errorRate);
    const next: BreakerDoc = { state: 'closed', consecutive, windowStart: fresh ? now : d.windowStart, calls, failures, until: 0 };
    return tripped ? { ...next, state: 'open', until: now + s.coolDownMs } : next;
  },
};
