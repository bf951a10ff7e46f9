// Upstream requests left open while a modern client gathers input (MRTR, 2026-07-28/basic/patterns/mrtr.mdx).
// The client holds only an opaque `requestState`: a random handle with an HMAC, checked and consumed once
// on the retry, bound to the method and name it was issued for, and expiring after a bounded wait
// (mrtr.mdx §Security Considerations: requestState is attacker-controlled).

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export interface Parked {
  method: string;
  /** `params.name` or `params.uri` of the original request; a retry must carry the same. */
  name: unknown;
  /** Called once when the wait runs out without a retry. */
  expire(): void;
}

export class ParkedRequests<P extends Parked> {
  private readonly key = randomBytes(32);
  private readonly parked = new Map<string, { value: P; timer: NodeJS.Timeout }>();
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
      if (this.parked.delete(handle)) value.expire();
    }, Math.max(0, deadline - Date.now())).unref();
    this.parked.set(handle, { value, timer });
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
    this.parked.delete(handle);
    clearTimeout(entry.timer);
    return entry.value;
  }

  /** Expires everything now (shutdown). */
  clear(): void {
    for (const { value, timer } of this.parked.values()) {
      clearTimeout(timer);
      value.expire();
    }
    this.parked.clear();
  }

  private sign(handle: string): string {
    return createHmac('sha256', this.key).update(handle).digest('base64url');
  }
}
