// The modern clients' subscriptions/listen streams open on a catalog that carry resource subscriptions, held
// apart from any one catalog (gateway.ts keeps one set for every catalog it builds), so that a reload can
// judge them again under its rules. A 2026-07-28 listen's filter is settled by its acknowledgment, its first
// message, sent once (basic/patterns/subscriptions.mdx §Acknowledgment): a URI the new rules no longer allow
// cannot be taken out of it in place. Such a listen is ended as a server ends one on its own initiative
// (§Graceful Closure: the listen's completion result), and the client that listens again is judged anew.

import type { Principal } from '../pipeline/principal.js';
import type { SubscriptionJudge } from '../pipeline/ports.js';

export interface OpenListen {
  readonly principal: Principal;
  readonly capabilities: Record<string, unknown>;
  /** The resource URIs its acknowledgment honoured (none before it came). */
  uris: readonly string[];
  /** Ends it with its completion result. */
  end(): void;
}

export class OpenListens {
  private readonly open = new Set<OpenListen>();

  /** Holds `listen` until the returned function is called (when it ends). */
  add(listen: OpenListen): () => void {
    this.open.add(listen);
    return () => this.open.delete(listen);
  }

  /**
   * Ends each listen one of whose URIs `mayKeep` no longer allows (one that cannot be judged is not kept),
   * judging one URI at a time so that a reload does not resolve every listen's hosts at once. Returns how
   * many were ended.
   */
  async rejudge(mayKeep: SubscriptionJudge): Promise<number> {
    let ended = 0;
    for (const listen of [...this.open]) {
      for (const uri of listen.uris) {
        if (await allowed(mayKeep, listen, uri)) continue;
        if (this.open.delete(listen)) {
          listen.end();
          ended++;
        }
        break;
      }
    }
    return ended;
  }
}

async function allowed(mayKeep: SubscriptionJudge, listen: OpenListen, uri: string): Promise<boolean> {
  try {
    return await mayKeep(listen.principal, uri, listen.capabilities);
  } catch {
    return false;
  }
}
