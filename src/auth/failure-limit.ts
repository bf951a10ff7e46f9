// Failed authentication attempts counted per client address (DESIGN.md §7: the failed-auth limit comes
// first in the auth stage). Past `attempts` failures in a window the address is refused with 429 until the
// window ends, before any key is hashed or token verified, so guessing keys or replaying forged tokens
// costs an attacker a window per few tries and costs Gatehouse nothing. In this replica's memory.

import { LRUCache } from 'lru-cache';

/** Addresses tracked at most; the least recently failing are forgotten first. */
const MAX_TRACKED = 100_000;

export interface FailureLimitSettings {
  attempts: number;
  windowSeconds: number;
}

interface Window {
  startedAt: number;
  failures: number;
}

export class AuthFailureLimiter {
  private windows: LRUCache<string, Window>;

  constructor(private settings: FailureLimitSettings, private readonly now: () => number = Date.now) {
    this.windows = this.newTable();
  }

  /** A reload takes new limits; windows already open keep their counts. */
  configure(settings: FailureLimitSettings): void {
    if (settings.windowSeconds !== this.settings.windowSeconds) this.windows = this.newTable(settings);
    this.settings = settings;
  }

  /** Seconds the address must wait before trying again, or 0 when it may try now. */
  retryAfter(address: string): number {
    if (this.settings.attempts === 0) return 0;
    const w = this.current(address);
    if (w === undefined || w.failures < this.settings.attempts) return 0;
    return Math.max(1, Math.ceil((w.startedAt + this.settings.windowSeconds * 1000 - this.now()) / 1000));
  }

  /** Counts one failed attempt from the address. */
  fail(address: string): void {
    if (this.settings.attempts === 0) return;
    const w = this.current(address);
    if (w) w.failures++;
    else this.windows.set(address, { startedAt: this.now(), failures: 1 });
  }

  /** The address's open window, if it has one. */
  private current(address: string): Window | undefined {
    const w = this.windows.get(address);
    if (w === undefined) return undefined;
    if (this.now() - w.startedAt >= this.settings.windowSeconds * 1000) {
      this.windows.delete(address);
      return undefined;
    }
    return w;
  }

  private newTable(settings = this.settings): LRUCache<string, Window> {
    return new LRUCache({ max: MAX_TRACKED, ttl: settings.windowSeconds * 1000, ttlAutopurge: false });
  }
}
