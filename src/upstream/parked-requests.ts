// Upstream requests left open while a modern client gathers input (MRTR, 2026-07-28/basic/patterns/mrtr.mdx).
// The client holds only an opaque `requestState`: a random handle with an HMAC, checked and consumed once
// on the retry, bound to the method and name it was issued for, and expiring after a bounded wait
// (mrtr.mdx §Security Considerations: requestState is attacker-controlled).

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export interface Parked {
  method: string;
  /** Whose call it is (principalKey): one caller's parked calls are bounded apart from everyone's. */
  owner?: string;
  /** `params.name` or `params.uri` of the original request; a retry must carry the same. */
  name: unknown;
  /** Called once when the wait runs out without a retry. */
  expire(): void;
}

/**
 * Calls parked at once, per caller and in all. Each holds an upstream request open for as long as the wait
 * lasts (inputTimeoutMs, 5 minutes by default) while its client holds nothing: a caller could otherwise
 * park thousands. Past a bound the oldest parked call (the caller's own first) is given up, as if its wait
 * had run out; its requestState is then refused as expired.
 */
export const MAX_PARKED_PER_OWNER = 64;
export const MAX_PARKED = 4_096;

export class ParkedRequests<P extends Parked> {
  private readonly key = randomBytes(32);
  private readonly parked = new Map<string, { value: P; timer: NodeJS.Timeout }>();
  /** How many calls each owner has parked now. */
  private readonly perOwner = new Map<string, number>();
  /**
   * When each value's wait ends, fixed when it is first parked: a value parked again (its retry lacked an
   * answer, and the question is asked anew) keeps that deadline, so empty retries cannot hold it longer.
   */
  private readonly deadlines = new WeakMap<P, number>();

  constructor(private readonly ttlMs: number) {}

  get size(): number {
    return this.parked.size;
  }

  /** Stores `value` and returns the requestState string that redeems it. */
  park(value: P): string {
    const handle = randomBytes(18).toString('base64url');
    let deadline = this.deadlines.get(value);
    if (deadline === undefined) this.deadlines.set(value, (deadline = Date.now() + this.ttlMs));
    const timer = setTimeout(() => {
      if (this.forget(handle)) value.expire();
    }, Math.max(0, deadline - Date.now())).unref();
    this.parked.set(handle, { value, timer });
    if (value.owner !== undefined) this.perOwner.set(value.owner, (this.perOwner.get(value.owner) ?? 0) + 1);
    this.bound(value.owner);
    return `${handle}.${this.sign(handle)}`;
  }

  /**
   * Redeems a requestState once; undefined when forged, expired, already used, for another request, or not
   * `accepted` (another caller's): then it stays parked for its owner.
   */
  take(requestState: string, method: string, name: unknown, accepted: (value: P) => boolean = () => true): P | undefined {
    const dot = requestState.indexOf('.');
    if (dot <= 0) return undefined;
    const handle = requestState.slice(0, dot);
    const given = Buffer.from(requestState.slice(dot + 1));
    const expected = Buffer.from(this.sign(handle));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const entry = this.parked.get(handle);
    if (!entry || entry.value.method !== method || entry.value.name !== name || !accepted(entry.value)) return undefined;
    this.forget(handle);
    clearTimeout(entry.timer);
    return entry.value;
  }

  /** Gives up the oldest parked calls past the bounds: the owner's past MAX_PARKED_PER_OWNER, anyone's past MAX_PARKED. */
  private bound(owner: string | undefined): void {
    if (owner !== undefined && (this.perOwner.get(owner) ?? 0) > MAX_PARKED_PER_OWNER) {
      // Oldest first: the map keeps the order calls were parked in.
      for (const [handle, e] of this.parked) {
        if (e.value.owner !== owner) continue;
        this.giveUp(handle);
        break;
      }
    }
    if (this.parked.size > MAX_PARKED) this.giveUp(this.parked.keys().next().value!);
  }

  private giveUp(handle: string): void {
    const entry = this.parked.get(handle)!;
    this.forget(handle);
    clearTimeout(entry.timer);
    entry.value.expire();
  }

  /** Takes a handle out (false when it was not parked), and out of its owner's count. */
  private forget(handle: string): boolean {
    const entry = this.parked.get(handle);
    if (entry === undefined) return false;
    this.parked.delete(handle);
    const owner = entry.value.owner;
    if (owner !== undefined) {
      const left = (this.perOwner.get(owner) ?? 1) - 1;
      if (left > 0) this.perOwner.set(owner, left);
      else this.perOwner.delete(owner);
    }
    return true;
  }

  /** Expires everything now (shutdown). */
  clear(): void {
    for (const { value, timer } of this.parked.values()) {
      clearTimeout(timer);
      value.expire();
    }
    this.parked.clear();
    this.perOwner.clear();
  }

  private sign(handle: string): string {
    return createHmac('sha256', this.key).update(handle).digest('base64url');
  }
}
