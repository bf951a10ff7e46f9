// Several upstreams as one: modern clients are answered from the catalog directly, legacy clients through
// a legacy bridge (built by the gateway) with the catalog standing in for a modern upstream (sessions,
// initialize, server requests on SSE all come from there).

import type { Logger } from '../log/logger.js';
import type { AccessPolicy } from '../policy/access.js';
import { asGatewayError, failure, GatewayError } from '../errors.js';
import { CallStream } from '../pipeline/call-stream.js';
import type { CallContext } from '../pipeline/context.js';
import { ACCEPTED, refused, type Outcome } from '../pipeline/outcome.js';
import type { LegacyBridgeFactory, ModernFace, Upstream, UpstreamProfile } from '../pipeline/ports.js';
import type { Principal } from '../pipeline/principal.js';
import { idOf, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import { coreTaskRefusal } from '../protocol/core-tasks.js';
import { KEEP, progressTokenIn, verdictOn, type AnsweredRequest } from '../protocol/answer-stream-rule.js';
import { META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION } from '../protocol/methods.js';
import { mcpParamHeaders } from '../protocol/param-headers.js';
import { MODERN_VERSIONS, type ClientEra } from '../protocol/versions.js';
import { upstreamMessage } from '../protocol/trace-context.js';
import { Catalog } from './catalog.js';
import { LegacyFront, type FrontTarget } from './legacy-front.js';
import type { OpenListens } from './open-listens.js';
import { MovingListen } from './moving-listen.js';
import type { Cancellation } from '../pipeline/cancellation.js';
import type { PrefixMode } from './public-names.js';

/** Least time between two rebuilds of a discover result that lacks a member (see rebuildPartial). */
const PARTIAL_REBUILD_MS = 1_000;

export class CatalogUpstream implements Upstream, FrontTarget {
  readonly name = 'catalog';
  readonly transport = 'http' as const;
  /** The aggregated view; the pipeline's resolve stage reads routes from it. */
  readonly catalog: Catalog;
  /** Legacy clients' sessions: this catalog's own, or handed over across reloads (legacy-front.ts). */
  private readonly front: LegacyFront;
  /** Whether the front is this catalog's alone, to close with it (else whoever passed it in lets go of it). */
  private readonly ownsFront: boolean;
  private discovered?: UpstreamProfile & { era: 'modern' };
  /**
   * While the discover result lacks a member (it was down), when it was last built, and whether a rebuild
   * is under way: legacy calls go on with the result at hand, and it is built again behind them.
   */
  private partial?: { at: number; rebuilding: boolean };

  constructor(
    private readonly members: readonly Upstream[],
    uriPrefixes: ReadonlyMap<Upstream, readonly string[]>,
    prefix: PrefixMode,
    bridgeLegacyClients: LegacyBridgeFactory,
    private readonly log: Logger,
    access?: AccessPolicy,
    /**
     * How a member is let go of when the catalog closes: closed, unless whoever built the catalog lets go of
     * its members itself (gateway.ts: runtimes that share a catalog across a reload each hold its members).
     */
    private readonly closeMember: (member: Upstream) => Promise<void> = (member) => member.close(),
    /**
     * Sessions to serve that may outlive this catalog (gateway.ts): it serves them at once when nothing
     * does yet, else once the gateway makes it (LegacyFront.serve).
     */
    front?: LegacyFront,
    /** Where modern clients' listens are held for a reload to judge again and take to its catalog. */
    private readonly openListens?: OpenListens,
  ) {
    this.catalog = new Catalog(members, uriPrefixes, prefix, log, access);
    this.ownsFront = front === undefined;
    this.front = front ?? new LegacyFront(bridgeLegacyClients);
    if (!this.front.serving) this.front.serve(this);
  }

  /** The discover result legacy sessions are answered from (FrontTarget). */
  get profile(): (UpstreamProfile & { era: 'modern' }) | undefined {
    return this.discovered;
  }

  forgetProfile(): void {
    this.discovered = undefined;
  }

  async prepare(): Promise<void> {
    if (!this.discovered) this.keep(await this.catalog.discoverMembers());
  }

  async handle(ctx: CallContext): Promise<Outcome> {
    if (ctx.era === 'legacy') {
      // Sessions handed over to a newer catalog (a reload) are its to serve, requests of the old config's too.
      const target = this.front.target;
      if (target !== this) return target.handle(ctx);
      try {
        // The legacy bridge answers initialize from the discover result, so it must exist first.
        if (!this.discovered) await this.prepare();
        else this.rebuildPartial();
      } catch (err) {
        return refused(failure(asGatewayError(err, 'GW_ERR_UPSTREAM_UNREACHABLE', this.log, { callId: ctx.callId })));
      }
      return this.front.bridge.handle(ctx);
    }
    if (ctx.kind !== 'request') return ACCEPTED;
    const request = upstreamMessage(ctx)!;
    // A 2025-11-25 task is carried by no member's face (protocol/core-tasks.ts): Gatehouse's own answer.
    const taskRefusal = coreTaskRefusal(request as JsonRpcRequest);
    if (taskRefusal !== undefined) return refused(taskRefusal);
    // A listen is a listening stream: SSE at once, with keep-alive comments while it is quiet.
    const listen = ctx.method === 'subscriptions/listen';
    const stream = new CallStream({ requestId: idOf(request), mode: listen ? 'listen' : 'call', acceptsSse: ctx.acceptsSse });
    // Stopped when the client leaves, or when the call is cut at its deadline (timeouts.callMs).
    const stop = stream.stopsOn(ctx.cancel);
    const held = listen ? this.holdListen(ctx, request as JsonRpcRequest, stop.cancel) : undefined;
    void (async () => {
      try {
        // Forwarded to the route the stages before judged, not to whatever holds its name by now. A held
        // listen posts itself, to whichever catalog it is on (moving-listen.ts).
        const reply = held !== undefined ? { messages: held.messages() } : await this.catalog.post(request, mcpParamHeaders(ctx.headers), stop.cancel, ctx.principal, ctx.route);
        const requestId = idOf(request);
        // A listen's notifications are the fan-out's own (catalog-listen.ts), but for updates about URIs the
        // egress stage withheld from it; a call's are judged here.
        const params = (request as JsonRpcRequest).params;
        const answered: AnsweredRequest | undefined = !listen ? { id: requestId!, progressToken: progressTokenIn(params), listen: false } : ctx.withheldUris === undefined ? undefined : { id: requestId!, progressToken: undefined, listen: true, asked: params?.notifications, withheld: ctx.withheldUris };
        for await (const msg of reply.messages) {
          // streamable-http.mdx §Receiving Messages: a modern client's stream carries notifications about its
          // request, then the response to it. A member's server request (a legacy habit) has no place there,
          // and a response naming another id answers nothing this client asked: both are left out. So are
          // notifications that do not relate to the request (protocol/answer-stream-rule.ts): a list change
          // (listen streams only), progress under another token.
          if ('method' in msg) {
            if (!('id' in msg)) {
              if (answered === undefined || verdictOn(msg, answered) === KEEP) stream.push(msg);
              else this.log.warn('an upstream sent a notification that does not relate to a modern call on its stream; it is dropped', { method: msg.method, callId: ctx.callId });
            } else this.log.warn('an upstream sent a request on a modern call\'s stream; it is dropped', { method: msg.method, callId: ctx.callId });
          } else if ((msg as JsonRpcResponse).id === requestId) return stream.finish(msg as JsonRpcResponse);
          else this.log.warn('an upstream answered another request id on a call\'s stream; it is dropped', { callId: ctx.callId });
        }
        stream.fail(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', 'An upstream ended the call without answering'));
      } catch (err) {
        if (!stop.cancel.aborted) stream.fail(asGatewayError(err, 'GW_ERR_UPSTREAM_BAD_RESPONSE', this.log, { callId: ctx.callId }));
      } finally {
        stop.dispose();
        held?.forget();
      }
    })();
    return { kind: 'stream', stream };
  }

  /**
   * A listen, held (open-listens.ts) until it ends, so that a reload ends it when its rules no longer allow
   * one of its resource subscriptions (`stop`: the catalog's listen then ends with its completion result),
   * and else takes it to the catalog it built.
   */
  private holdListen(ctx: CallContext, request: JsonRpcRequest, stop: Cancellation): (MovingListen & { forget(): void }) | undefined {
    if (this.openListens === undefined) return undefined;
    const listen = new MovingListen(ctx.principal, ctx.clientCapabilities, ctx.receivedAt, this.catalog, request, mcpParamHeaders(ctx.headers), stop, this.openListens);
    return Object.assign(listen, { forget: this.openListens.add(listen) });
  }

  private keep(built: { result: Record<string, unknown>; missing: string[] }): void {
    this.discovered = { era: 'modern', version: MODERN_VERSIONS[0], discover: built.result, alsoLegacy: false };
    this.partial = built.missing.length > 0 ? { at: Date.now(), rebuilding: false } : undefined;
  }

  /**
   * A discover result that lacks a member is built again, at most every PARTIAL_REBUILD_MS and in the
   * background: a member that is slow to fail must not hold every legacy call up.
   */
  private rebuildPartial(): void {
    const partial = this.partial;
    if (!partial || partial.rebuilding || Date.now() - partial.at < PARTIAL_REBUILD_MS) return;
    partial.rebuilding = true;
    void this.catalog.discoverMembers().then(
      (built) => {
        if (this.partial === partial) this.keep(built);
      },
      () => {
        // Every member down now: the result at hand (from when some answered) stays, and is tried again.
        if (this.partial === partial) this.partial = { at: Date.now(), rebuilding: false };
      },
    );
  }

  /** See Catalog.namesUnchanged: whether one member could be served by pass-through as it is. */
  namesUnchanged(capabilities: Record<string, unknown> = {}): Promise<boolean> {
    return this.catalog.namesUnchanged(capabilities);
  }

  /** How many tools the caller may see (for /health). */
  async visibleToolCount(principal: Principal): Promise<number> {
    let count = 0;
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const params = { ...(cursor !== undefined ? { cursor } : {}), _meta: { [META_PROTOCOL_VERSION]: MODERN_VERSIONS[0], [META_CLIENT_CAPABILITIES]: {} } };
      const reply = await this.catalog.post({ jsonrpc: '2.0', id: 'gh-health', method: 'tools/list', params }, {}, AbortSignal.timeout(10_000), principal);
      const first = await reply.messages.next();
      const result = (first.done ? undefined : (first.value as JsonRpcResponse).result) as { tools?: unknown[]; nextCursor?: string } | undefined;
      count += result?.tools?.length ?? 0;
      if (typeof result?.nextCursor !== 'string') break;
      cursor = result.nextCursor;
    }
    return count;
  }

  knownEra(): 'modern' {
    return 'modern';
  }

  /** Its face is modern; legacy clients are held by the legacy-client bridge in front of it. */
  speaksEra(era: ClientEra): boolean {
    return era === 'modern';
  }

  /** A 2025-11-25 task is carried by no member's face, on either era's path (see handle). */
  async refusesCoreTasks(): Promise<boolean> {
    return true;
  }

  /** The aggregated upstreams (metrics report each one). */
  get upstreams(): readonly Upstream[] {
    return this.members;
  }

  /** The public tool name, when the catalog has listed it (bounded label values for metrics). */
  knowsTool(name: string): boolean {
    return this.catalog.knowsTool(name);
  }

  async ready(): Promise<boolean> {
    return (await Promise.all(this.members.map((m) => m.ready()))).every(Boolean);
  }

  async readiness(): Promise<Record<string, boolean>> {
    const states = await Promise.all(this.members.map((m) => m.ready()));
    return Object.fromEntries(this.members.map((m, i) => [m.name, states[i]!]));
  }

  async close(): Promise<void> {
    this.catalog.close();
    if (this.ownsFront) await this.front.close();
    await Promise.all(this.members.map((m) => this.closeMember(m)));
  }

  async modernFace(): Promise<ModernFace> {
    const discover = await this.catalog.discover();
    return { messages: this.catalog, capabilities: discover.capabilities as Record<string, unknown>, http: false };
  }
}
