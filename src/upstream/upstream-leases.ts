// Upstreams that outlive a config reload: each is held by every runtime (config generation) built with the
// same config for it, and closed when the last of them lets go; so are the catalog and its legacy clients'
// sessions (catalog/legacy-front.ts). It does not decide which may be kept (gateway.ts, lease-key.ts do) nor
// how one is built.

import type { Upstream } from '../pipeline/ports.js';

/** What may be held: anything closed once nobody holds it. */
interface Closable {
  close(): Promise<void>;
}

interface Lease<T extends Closable> {
  key: string;
  upstream: T;
  holders: number;
}

export class UpstreamLeases<T extends Closable = Upstream> {
  /** By key: what an upstream was built from (its name and config), so only an identical one is shared. */
  private readonly byKey = new Map<string, Lease<T>>();
  private readonly byUpstream = new Map<T, Lease<T>>();

  /**
   * The upstream built from `key`, held once more: the one already running when there is one, else a new
   * one from `create`. `reused` says which.
   */
  acquire<U extends T>(key: string, create: () => U): { upstream: U; reused: boolean } {
    const running = this.byKey.get(key);
    if (running !== undefined) {
      running.holders++;
      // A key names one kind of upstream (an entry's, or a catalog's): the one held under it was made by a
      // `create` of the same type.
      return { upstream: running.upstream as U, reused: true };
    }
    const upstream = create();
    const lease: Lease<T> = { key, upstream, holders: 1 };
    this.byKey.set(key, lease);
    this.byUpstream.set(upstream, lease);
    return { upstream, reused: false };
  }

  /**
   * Lets go of one hold on `upstream`: closed once nothing holds it. An upstream that was never acquired
   * here is closed at once (its runtime owned it alone).
   */
  async release(upstream: T): Promise<void> {
    const lease = this.byUpstream.get(upstream);
    if (lease === undefined) return upstream.close();
    if (--lease.holders > 0) return;
    this.byUpstream.delete(upstream);
    if (this.byKey.get(lease.key) === lease) this.byKey.delete(lease.key);
    await upstream.close();
  }
}
