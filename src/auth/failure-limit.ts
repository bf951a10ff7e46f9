// Failed authentication attempts counted per client address (DESIGN.md §7: the failed-auth limit comes
// first in the auth stage). Past `attempts` failures in a window the address is refused with 429 until the
// window ends, before any key is hashed or token verified, so guessing keys or replaying forged tokens
// costs an attacker a window per few tries and costs Gatehouse nothing.
//
// The counts live in the store (fixed windows on the store's clock), so replicas on one Redis count an
// address's failures together. Which addresses are blocked is remembered here as well, so a request is
// checked without a round trip; another replica learns of a block at the address's next failure there.
// This replica also counts in memory, at once, as each failure is made: guesses sent together (pipelined on
// one connection, or on many at once) are each checked before the store has counted the ones before them,
// and until 3 December all of them were answered. The in-memory count also holds the limit while the store
// cannot count.

import { growingLru } from '../lru.js';
import type { WindowCount } from '../store/store.js';

/** Addresses tracked at most; the least recently failing are forgotten first. */
const MAX_TRACKED = 100_000;

export interface FailureLimitSettings {
  attempts: number;
  windowSeconds: number;
}

/** Adds to an address's failure count in its current window (the store's addToWindow). */
export type CountFailure = (key: string, windowMs: number) => Promise<WindowCount>;

export class AuthFailureLimiter {
  /** Blocked addresses and until when (epoch ms). */
  private readonly blocked = growingLru<string, number>(MAX_TRACKED);
  /** Counts kept here while the store cannot count. */
  private readonly local = growingLru<string, WindowCount>(MAX_TRACKED);

  constructor(
    private settings: FailureLimitSettings,
    private readonly count?: CountFailure,
    private readonly now: () => number = Date.now,
  ) {}

  /** A reload takes new limits; counts already made stay, and each address is judged on them at its next failure. */
  configure(settings: FailureLimitSettings): void {
    if (settings.attempts !== this.settings.attempts || settings.windowSeconds !== this.settings.windowSeconds) this.blocked.clear();
    this.settings = settings;
  }

  /** Whether any address is blocked now (or was, until its next look): when not, nobody need be looked up. */
  get anyBlocked(): boolean {
    return this.settings.attempts !== 0 && this.blocked.size > 0;
  }

  /** Seconds the address must wait before trying again, or 0 when it may try now. */
  retryAfter(address: string): number {
    // Every request with a credential asks; almost always nobody is blocked, and the LRU's get would still
    // reorder its list.
    if (this.settings.attempts === 0 || this.blocked.size === 0) return 0;
    const until = this.blocked.get(address);
    if (until === undefined) return 0;
    const wait = until - this.now();
    if (wait <= 0) {
      this.blocked.delete(address);
      return 0;
    }
    return Math.max(1, Math.ceil(wait / 1000));
  }

  /**
   * Counts one failed attempt from the address: here at once (the next request from it already meets the
   * limit), then in the store, shared by replicas; resolves once both are counted (the refusal waits).
   */
  async fail(address: string): Promise<void> {
    if (this.settings.attempts === 0) return;
    const windowMs = this.settings.windowSeconds * 1000;
    const here = this.countHere(address, windowMs);
    if (here.total >= this.settings.attempts) this.blocked.set(address, here.resetsAt);
    if (this.count === undefined) return;
    let counted: WindowCount;
    try {
      counted = await this.count(`authfail:${address}`, windowMs);
    } catch {
      // The count here stands in.
      return;
    }
    if (counted.total >= this.settings.attempts) this.blocked.set(address, Math.max(counted.resetsAt, this.blocked.get(address) ?? 0));
  }

  private countHere(address: string, windowMs: number): WindowCount {
    const now = this.now();
    const w = this.local.get(address);
    const next = w !== undefined && w.resetsAt > now ? { total: w.total + 1, resetsAt: w.resetsAt } : { total: 1, resetsAt: now - (now % windowMs) + windowMs };
    this.local.set(address, next);
    return next;
  }
}
