// A circuit breaker's state machine, as the SQLite store runs it (the Redis store runs the same in Lua,
// redis-store.ts). Closed: calls pass, outcomes are counted (consecutive failures, and calls and failures
// in a fixed window). Open: calls are refused until `openUntil`. Then one caller gets the probe (half-open)
// while the others are still refused; the probe's success closes the circuit, its failure reopens it. A
// probe that never reports (its process died) is given another after a cool-down. Each probe is numbered,
// and only the current probe's outcome (recorded with its number) decides: a late answer of a call admitted
// before the circuit opened, or of a probe whose time ran out, once closed or reopened it in the probe's stead.
// A probe whose call never reached the upstream (held back by a later stage) is given back: the next call probes.

import type { BreakerAdmission, BreakerSettings, BreakerState } from './store.js';

export interface BreakerDoc {
  state: BreakerState;
  consecutive: number;
  windowStart: number;
  calls: number;
  failures: number;
  /** Open: refused until then. Half-open: the probe's time is up then. */
  until: number;
  /** The number of the last probe let through; kept when the circuit closes, so numbers are never reused. */
  probe?: number;
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

const CLOSED = (now: number, probe: number | undefined): BreakerDoc => ({ state: 'closed', consecutive: 0, windowStart: now, calls: 0, failures: 0, until: 0, ...(probe !== undefined ? { probe } : {}) });

/**
 * The next probe's number: one past the last, and at least the time, so a breaker forgotten (expired) and
 * opened again does not hand out a number a probe of its earlier life may still answer with.
 */
function nextProbe(doc: BreakerDoc, now: number): number {
  return Math.max((doc.probe ?? 0) + 1, now);
}

export const nextBreaker = {
  admit(doc: BreakerDoc | undefined, now: number, s: BreakerSettings): { admission: BreakerAdmission; next: BreakerDoc | undefined } {
    if (doc === undefined || doc.state === 'closed') return { admission: { verdict: 'closed' }, next: doc };
    if (now < doc.until) return { admission: { verdict: 'open', retryAfterMs: doc.until - now }, next: doc };
    // The cool-down (or a silent probe's time) is over: this caller probes.
    const probe = nextProbe(doc, now);
    return { admission: { verdict: 'probe', probe }, next: { ...doc, state: 'half_open', until: now + s.coolDownMs, probe } };
  },

  /**
   * The probe `probe` gave back without an outcome (its call never reached the upstream): still half-open,
   * its time is up now, so the next call probes instead of waiting out a whole cool-down more. Undefined when
   * there is nothing to change (not half-open, or another probe is current).
   */
  release(doc: BreakerDoc | undefined, now: number, probe: number): BreakerDoc | undefined {
    if (doc === undefined || doc.state !== 'half_open' || doc.probe !== probe) return undefined;
    return { ...doc, until: Math.min(doc.until, now) };
  },

  /** `probe`: the number the call was admitted with as a probe, if it was. */
  record(doc: BreakerDoc | undefined, ok: boolean, now: number, s: BreakerSettings, probe?: number): BreakerDoc {
    const d = doc ?? CLOSED(now, undefined);
    if (d.state === 'half_open') {
      // Not the current probe: a call admitted before the circuit opened, or a probe whose time ran out.
      if (probe === undefined || probe !== d.probe) return d;
      return ok ? CLOSED(now, d.probe) : { ...d, state: 'open', consecutive: d.consecutive + 1, until: now + s.coolDownMs };
    }
    if (d.state === 'open') return d; // a late answer of a call let through before it opened
    const fresh = now - d.windowStart >= s.windowMs;
    const calls = (fresh ? 0 : d.calls) + 1;
    const failures = (fresh ? 0 : d.failures) + (ok ? 0 : 1);
    const consecutive = ok ? 0 : d.consecutive + 1;
    const tripped = consecutive >= s.consecutiveFailures || (s.errorRate !== undefined && calls >= s.minCalls && failures / calls >= s.errorRate);
    const next: BreakerDoc = { state: 'closed', consecutive, windowStart: fresh ? now : d.windowStart, calls, failures, until: 0, ...(d.probe !== undefined ? { probe: d.probe } : {}) };
    return tripped ? { ...next, state: 'open', until: now + s.coolDownMs } : next;
  },
};
