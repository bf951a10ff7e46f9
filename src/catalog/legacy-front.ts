// The sessions of legacy clients in front of the catalog (several upstreams as one), apart from any one
// catalog: a reload that builds a new catalog over the same upstreams by name hands them over to it, so
// those clients go on instead of getting 404 (2025-11-25/basic/transports.mdx §Session Management). It does
// not decide when a hand-over is sound (gateway.ts, lease-key.ts) nor aggregate anything (catalog.ts).

import type { Cancellation } from '../pipeline/cancellation.js';
import type { LegacyBridge, LegacyBridgeFactory, SubscriptionJudge, UpstreamMessages, UpstreamProfile } from '../pipeline/ports.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc.js';
import type { Principal } from '../pipeline/principal.js';
import type { Catalog } from './catalog.js';
import type { CallContext, Route } from '../pipeline/context.js';
import type { Outcome } from '../pipeline/outcome.js';

/** What the front needs of the catalog that serves it now (CatalogUpstream). */
export interface FrontTarget {
  /** Answers a legacy client's request (a catalog no longer served passes its own on to the one that is). */
  handle(ctx: CallContext): Promise<Outcome>;
  readonly catalog: Catalog;
  /** The discover result legacy sessions are answered from; set before any request reaches the bridge. */
  readonly profile: (UpstreamProfile & { era: 'modern' }) | undefined;
  /** The upstream stopped behaving as its discover result said: it is built again at the next request. */
  forgetProfile(): void;
  /** Builds `profile` when there is none yet (it fails when no member answers). */
  prepare(): Promise<void>;
}

export class LegacyFront implements UpstreamMessages {
  readonly upstream = 'catalog';
  /** The legacy-client bridge, holding the sessions; every request of theirs reaches the current target. */
  readonly bridge: LegacyBridge;
  private current: FrontTarget | undefined;
  /**
   * The sessions' listens (subscriptions/listen) on the catalog serving them, each ended when another takes
   * over: the bridge then opens it again there a second later, with the session's subscriptions, and tells
   * its client to refetch its lists. Left on the old catalog, a listen would miss a rebuilt member's
   * notifications, and pass on those the new rules hide.
   */
  private readonly listens = new Set<AbortController>();

  constructor(bridgeLegacyClients: LegacyBridgeFactory) {
    this.bridge = bridgeLegacyClients(this, () => this.target.profile!, () => this.target.forgetProfile());
  }

  /** The catalog that serves the sessions now: the one of the running configuration. */
  get target(): FrontTarget {
    if (this.current === undefined) throw new Error('the legacy front serves no catalog yet');
    return this.current;
  }

  /**
   * Makes `target` serve the sessions from the next request on (a reload's new catalog, once it runs). The
   * listens on the old catalog end once the new one has its discover result (or failed to build it): the
   * bridge opens them again from that result, and until 5 December, with none built yet (it was built by
   * the first legacy request to reach the new catalog; one the access stage refuses never does), it found
   * none, and asked again after a pause doubling up to 30 s: the sessions' subscriptions went unheard
   * until their clients' next request that reached the catalog.
   */
  serve(target: FrontTarget): void {
    const previous = this.current;
    this.current = target;
    if (previous === undefined || previous === target) return;
    const moving = [...this.listens];
    this.listens.clear();
    void target
      .prepare()
      .catch(() => {})
      .finally(() => {
        for (const listen of moving) listen.abort();
      });
  }

  /**
   * Judges the sessions' resource subscriptions again under the running configuration's rules (a reload:
   * gateway.ts), dropping those no longer allowed (LegacyClientBridge.rejudgeSubscriptions).
   */
  rejudgeSubscriptions(mayKeep: SubscriptionJudge): Promise<void> {
    return this.bridge.rejudgeSubscriptions(mayKeep);
  }

  /** Whether a catalog serves the sessions yet. */
  get serving(): boolean {
    return this.current !== undefined;
  }

  // Each request goes to the current catalog when it is made; a call already under way stays on its own.
  // A call's promise is the catalog's own (no frame of this one's around it): only listens are wrapped.
  post(message: JsonRpcMessage, headers: Record<string, string>, cancel?: AbortSignal | Cancellation, principal?: Principal, route?: Route): ReturnType<UpstreamMessages['post']> {
    const catalog = this.target.catalog;
    if (!('method' in message) || message.method !== 'subscriptions/listen' || !(cancel instanceof AbortSignal)) return catalog.post(message, headers, cancel, principal, route);
    return this.listen(catalog, message, headers, cancel, principal);
  }

  /** A listen on `catalog`, ended by the bridge (`cancel`) or by a hand-over to another catalog. */
  private async listen(catalog: Catalog, message: JsonRpcMessage, headers: Record<string, string>, cancel: AbortSignal, principal?: Principal): ReturnType<UpstreamMessages['post']> {
    const handover = new AbortController();
    this.listens.add(handover);
    try {
      const reply = await catalog.post(message, headers, AbortSignal.any([cancel, handover.signal]), principal);
      return { ...reply, messages: this.held(reply.messages, handover) };
    } catch (err) {
      this.listens.delete(handover);
      throw err;
    }
  }

  /** A listen's messages, no longer counted among the sessions' listens once they end. */
  private async *held(messages: AsyncGenerator<JsonRpcMessage, void, void>, handover: AbortController): AsyncGenerator<JsonRpcMessage, void, void> {
    try {
      yield* messages;
    } finally {
      this.listens.delete(handover);
    }
  }

  // The catalog offers no GET stream and has no upstream session to end (catalog.ts); its sessions' streams
  // are fed by subscriptions/listen, a post.
  openGet(): ReturnType<UpstreamMessages['openGet']> {
    return this.target.catalog.openGet();
  }

  deleteSession(): Promise<void> {
    return this.target.catalog.deleteSession();
  }

  /** Ends the sessions (their bridge): when no catalog is left to serve them. */
  close(): Promise<void> {
    return this.bridge.close();
  }
}
