// One writer at a time for a document in the store, across replicas: a claim in the store with a short
// lease stands in for a lock (the store offers no compare-and-set on documents). Within one process the
// writers of a key queue up first, so calls arriving together never contend in the store. It knows nothing
// of what is written; the pins use it.

import { randomUUID } from 'node:crypto';
import type { IdempotencyClaim } from '../store/store.js';

/** The store operations a lock takes; each fails closed (the caller passes them through the store guard). */
export interface LockStore {
  claim(key: string, digest: string, owner: string, leaseMs: number, ttlMs: number): Promise<IdempotencyClaim>;
  release(key: string, owner: string): Promise<void>;
}

/** What `run` answers when another writer held the lock for all its tries. */
export const BUSY: unique symbol = Symbol('busy');

export interface LockTimes {
  /** How long a holder may keep the lock: one that dies holding it frees it after this long. */
  leaseMs: number;
  /** How many times to try for a lock another replica holds, and how long to wait between tries. */
  tries: number;
  waitMs: number;
}

export class StoreLock {
  /** Per key, the last writer queued in this process. */
  private readonly queue = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: LockStore,
    private readonly times: LockTimes,
  ) {}

  /** Runs `work` holding the lock `key`; BUSY, without running it, when another replica held it throughout. */
  run<T>(key: string, work: () => Promise<T>): Promise<T | typeof BUSY> {
    const prior = this.queue.get(key) ?? Promise.resolve();
    const run = prior.then(() => this.claimed(key, work));
    const tail = run.catch(() => undefined);
    this.queue.set(key, tail);
    void tail.then(() => {
      if (this.queue.get(key) === tail) this.queue.delete(key);
    });
    return run;
  }

  private async claimed<T>(key: string, work: () => Promise<T>): Promise<T | typeof BUSY> {
    const owner = randomUUID();
    // The record lives no longer than its lease: a lock whose holder died is gone with it.
    for (let attempt = 1; (await this.store.claim(key, 'lock', owner, this.times.leaseMs, this.times.leaseMs)).outcome !== 'claimed'; attempt++) {
      if (attempt >= this.times.tries) return BUSY;
      await new Promise((r) => setTimeout(r, this.times.waitMs));
    }
    try {
      return await work();
    } finally {
      // A release that fails leaves the lock to its lease.
      await this.store.release(key, owner).catch(() => {});
    }
  }
}
