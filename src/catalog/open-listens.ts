// The modern clients' subscriptions/listen streams open on a catalog, held apart from any one catalog
// (gateway.ts keeps one set for every catalog it builds), so that a reload can judge them again under its
// rules and take them to the catalog it built. A 2026-07-28 listen's filter is settled by its
// acknowledgment, its first message, sent once (basic/patterns/subscriptions.mdx §Acknowledgment): a URI the
// new rules no longer allow cannot be taken out of it in place. Such a listen is ended as a server ends one
// on its own initiative (§Graceful Closure: the listen's completion result), and the client that listens
// again is judged anew. The others move to the new catalog (moving-listen.ts).
// A listen that arrived before a reload's judgement began was let through by the old egress rules, and that
// judgement may have missed it: still in the old configuration's pipeline (held only after it), or awaiting
// its acknowledgment (no URI yet). It is judged under the latest rules once acknowledged (acknowledged).
// Until 5 December it went on, the upstream watching a URI they forbid, until a later reload.

import type { Principal } from '../pipeline/principal.js';
import type { SubscriptionJudge } from '../pipeline/ports.js';
import type { Catalog } from './catalog.js';

export interface OpenListen {
  readonly principal: Principal;
  readonly capabilities: Record<string, unknown>;
  /** `performance.now()` when its request arrived (CallContext.receivedAt): before a judgement, or after. */
  readonly receivedAt: number;
  /** The resource URIs its acknowledgment honoured (none before it came). */
  readonly uris: readonly string[];
  /** Ends it with its completion result. */
  end(): void;
  /** Takes it to `catalog` from its next message on; false when it is there already (or ended). */
  moveTo(catalog: Catalog): boolean;
}

export class OpenListens {
  private readonly open = new Set<OpenListen>();
  /** The running configuration's catalog, once a reload named one: listens opened elsewhere go there. */
  private current: Catalog | undefined;
  /** The rules that last judged the listens, and when that judgement began (`performance.now()`). */
  private judged: { mayKeep: SubscriptionJudge; at: number } | undefined;

  /**
   * Holds `listen` until the returned function is called (when it ends). One opened on an older catalog (a
   * request the retired configuration's pipeline still carried) is taken to the current one at once.
   */
  add(listen: OpenListen): () => void {
    this.open.add(listen);
    if (this.current !== undefined) listen.moveTo(this.current);
    return () => this.open.delete(listen);
  }

  /** Makes `catalog` the one listens belong on (a reload's, once its configuration runs); see moveAll. */
  serve(catalog: Catalog): void {
    this.current = catalog;
  }

  /**
   * Takes every open listen elsewhere to the catalog served now (after a reload's rejudge): that of the
   * latest reload, so a slower rejudge of an earlier one that ends later moves none back. Returns how many
   * moved.
   */
  moveAll(): number {
    const current = this.current;
    if (current === undefined) return 0;
    let moved = 0;
    for (const listen of this.open) if (listen.moveTo(current)) moved++;
    return moved;
  }

  /**
   * Ends each listen one of whose URIs `mayKeep` no longer allows (one that cannot be judged is not kept),
   * judging one URI at a time so that a reload does not resolve every listen's hosts at once. Returns how
   * many were ended.
   */
  async rejudge(mayKeep: SubscriptionJudge): Promise<number> {
    this.judged = { mayKeep, at: performance.now() };
    let ended = 0;
    for (const listen of [...this.open]) if (await this.endIfForbidden(listen, mayKeep)) ended++;
    return ended;
  }

  /**
   * `listen` (held) has its first acknowledgment, so its URIs: one that arrived before the latest judgement
   * began was let through by older rules, and is judged under that judgement's (in the background). Any
   * other costs a comparison.
   */
  acknowledged(listen: OpenListen): void {
    const judged = this.judged;
    if (judged === undefined || listen.receivedAt >= judged.at || listen.uris.length === 0) return;
    void this.endIfForbidden(listen, judged.mayKeep);
  }

  /** Ends `listen` if `mayKeep` no longer allows one of its URIs (one that cannot be judged is not kept). */
  private async endIfForbidden(listen: OpenListen, mayKeep: SubscriptionJudge): Promise<boolean> {
    for (const uri of listen.uris) {
      if (await allowed(mayKeep, listen, uri)) continue;
      if (!this.open.delete(listen)) return false;
      listen.end();
      return true;
    }
    return false;
  }
}

/** Whether the subscriber may keep `uri` under the rules now in force; a judge that throws says no (fail closed). */
export async function allowed(mayKeep: SubscriptionJudge, listen: { principal: Principal; capabilities: Record<string, unknown> }, uri: string): Promise<boolean> {
  try {
    return await mayKeep(listen.principal, uri, listen.capabilities);
  } catch {
    return false;
  }
}
