// Upstreams that outlive a config reload: each is held by every runtime (config generation) built with the
// same config for it, and closed when the last of them lets go. It does not decide which upstreams may be
// kept (gateway.ts does) nor how one is built.

import type { Upstream } from '../pipeline/ports.js';

interface Lease {
  key: string;
  upstream: Upstream;
  holders: number;
}

export class UpstreamLeases {
  /** By key: what an upstream was built from (its name and config), so only an identical one is shared. */
  private readonly byKey = new Map<string, Lease>();
  private readonly byUpstream = new Map<Upstream, Lease>();

  /**
   * The upstream built from `key`, held once more: the one already running when there is one, else a new
   * one from `create`. `reused` says which.
   */
  acquire<U extends Upstream>(key: string, create: () => U): { upstream: U; reused: boolean } {
    const running = this.byKey.get(key);
    if (running !== undefined) {
      running.holders++;
      // A key names one kind of upstream (an entry's, or a catalog's): the one held under it was made by a
      // `create` of the same type.
      return { upstream: running.upstream as U, reused: true };
    }
    const upstream = create();
    const lease: Lease = { key, upstream, holders: 1 };
    this.byKey.set(key, lease);
    this.byUpstream.set(upstream, lease);
    return { upstream, reused: false };
  }

  /**
   * Lets go of one hold on `upstream`: closed once nothing holds it. An upstream that was never acquired
   * here is closed at once (its runtime owned it alone).
   */
  async release(upstream: Upstream): Promise<void> {
    const lease = this.byUpstream.get(upstream);
    if (lease === undefined) return upstream.close();
    if (--lease.holders > 0) return;
    this.byUpstream.delete(upstream);
    if (this.byKey.get(lease.key) === lease) this.byKey.delete(lease.key);
    await upstream.close();
  }
}
