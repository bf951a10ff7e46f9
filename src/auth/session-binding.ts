// Legacy session ids are bearer-like handles: whoever presents one is served that session. Binding each
// id to the Principal that first used it (2025-11-25 security best practices §Session Hijacking: bind
// sessions to the user) means a leaked or guessed id is useless to another caller, who gets the same 404
// as for a session that does not exist.

import { LRUCache } from 'lru-cache';
import { principalKey, type Principal } from './principal.js';

export class SessionBinding {
  private readonly owners: LRUCache<string, string>;

  constructor(opts: { max: number; idleTimeoutMs: number }) {
    // Sessions live in upstreams and bridges; the binding outlives none of them and is bounded the same way.
    this.owners = new LRUCache({ max: Math.max(opts.max * 4, 1024), ttl: opts.idleTimeoutMs, updateAgeOnGet: true });
  }

  /** Sessions used within the idle timeout. */
  get size(): number {
    this.owners.purgeStale();
    return this.owners.size;
  }

  /** True when the caller may use the session: it owns it, or is the first to present it. */
  admit(sessionId: string, principal: Principal): boolean {
    const who = principalKey(principal);
    const owner = this.owners.get(sessionId);
    if (owner === undefined) {
      this.owners.set(sessionId, who);
      return true;
    }
    return owner === who;
  }
}
