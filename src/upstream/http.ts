// Streamable HTTP upstream: one undici Pool per upstream, and the choice, per call, between the
// byte-for-byte pass-through (same era on both sides) and one of the era bridges, from the cached era
// verdict. It also answers server/discover for modern clients.

import { randomUUID } from 'node:crypto';
import type { HttpUpstreamConfig } from '../config/types.js';
import { failure } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { CallContext } from '../pipeline/context.js';
import { json, refused, type Outcome } from '../pipeline/outcome.js';
import type { CallHandler, ModernFace, SubscriptionJudge, Upstream, UpstreamProfile } from '../pipeline/ports.js';
import type { JsonRpcRequest } from '../protocol/jsonrpc.js';
import { MODERN_VERSIONS, protocolVersionHeader, type ClientEra } from '../protocol/versions.js';
import { bridgedProfile, LegacyClientBridge, type ReplacePause } from './bridge-legacy-client.js';
import { ModernClientBridge } from './bridge-modern-client.js';
import { EraVerdict, probeUpstream } from './era-probe.js';
import { MessageClient } from './message-client.js';
import { upstreamCredentials, type UpstreamCredentials } from './credentials.js';
import { toGatewayError } from './failures.js';
import { PassThrough } from './passthrough.js';
import { HttpTunables } from './http-tunables.js';
import { modernFaceOf } from './modern-face.js';
import { withoutExtensions } from '../protocol/era-shapes.js';

const READINESS_PROBE_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'server/discover',
};
const READINESS_PROBE_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 'gatehouse-readiness',
  method: 'server/discover',
  params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
});

/** The youngest verdict a refused initialize makes Gatehouse probe again (see afterInitialize). */
const REPROBE_AFTER_REFUSED_INIT_MS = 1_000;

export class HttpUpstream implements Upstream {
  readonly transport = 'http' as const;
  readonly name: string;
  private readonly era: HttpUpstreamConfig['era'];
  /** Its pools (the calls', the listening streams') and time limits, which a reload changes in place (retune). */
  private readonly tunables: HttpTunables;
  private readonly path: string;
  /** The upstream's own credentials (configured headers, or a client-credentials token), on every request. */
  private readonly credentials: UpstreamCredentials;
  private readonly log: Logger;
  private readonly passThrough: PassThrough;
  private readonly messages: MessageClient;
  private readonly verdict: EraVerdict;
  private readonly modernBridge: ModernClientBridge;
  private readonly legacyBridge: LegacyClientBridge;

  constructor(
    config: HttpUpstreamConfig,
    sessions: { max: number; idleTimeoutMs: number; inputTimeoutMs: number },
    log: Logger,
    observeUpstream: (seconds: number) => void = () => {},
    /** How its legacy-client bridge waits out a replacement listen's pause: a timer unless a test stands in. */
    replacePause?: ReplacePause,
  ) {
    this.name = config.name;
    this.era = config.era;
    this.log = log.child({ upstream: config.name });
    const url = new URL(config.url);
    this.path = url.pathname + url.search;
    this.credentials = upstreamCredentials(config, this.log);
    // Listening streams get a pool of their own, as large as the sessions Gatehouse holds (http-tunables.ts).
    this.tunables = new HttpTunables(config, sessions.max);
    this.passThrough = new PassThrough(this.tunables, this.path, this.credentials, config.era, this.name, this.log, observeUpstream, config.maxMessageBytes);
    const messages = new MessageClient(this.tunables, this.path, this.credentials, this.name, observeUpstream, config.maxMessageBytes);
    this.messages = messages;
    this.verdict = new EraVerdict(async () => {
      const profile = await probeUpstream(messages, config.era, { log: this.log });
      this.log.info('upstream era detected', { era: profile.era, version: profile.version, ...(profile.era === 'modern' ? { alsoLegacy: profile.alsoLegacy } : {}) });
      return profile;
    });
    const legacyProfile = (): UpstreamProfile & { era: 'legacy' } => this.verdict.known as UpstreamProfile & { era: 'legacy' };
    this.modernBridge = new ModernClientBridge(messages, legacyProfile, sessions.inputTimeoutMs, () => this.verdict.invalidate(), this.log);
    // The legacy-client bridge serves a modern upstream that is not also legacy (bridgeFor), as the verdict now has it.
    this.legacyBridge = new LegacyClientBridge(messages, () => bridgedProfile(this.verdict.known, (p) => !p.alsoLegacy), sessions, () => this.verdict.invalidate(), true, this.log, replacePause);
  }

  /**
   * Takes a reload's new `timeouts` and `pool` (an entry that differs from this one's in those, in
   * `maxSessions`, which only an HTTP+SSE server's sessions read, or in `uriPrefixes`, which the catalog
   * reads): the era verdict, the sessions Gatehouse holds, their listens and the requests in flight go on.
   */
  retune(config: HttpUpstreamConfig): void {
    this.tunables.apply(config);
  }

  handle(ctx: CallContext): Promise<Outcome> {
    // A client of the era the upstream is pinned to needs no verdict: plain pass-through, no probe (except
    // that Gatehouse answers server/discover itself, from the upstream's own discover result). The
    // pass-through's own promise is handed back: an async function returning it would add two turns.
    if (this.pinnedPassThrough(ctx)) return this.passThrough.forward(ctx);
    // The same once the upstream's era is known (every call after the first): the handler's promise as it is.
    const known = this.verdict.known;
    return known !== undefined ? this.routed(ctx, known) : this.afterVerdict(ctx);
  }

  /** Whether handling this call may have to find out the upstream's era first (a handshake, which may fail). */
  mayProbe(ctx: CallContext): boolean {
    return !this.pinnedPassThrough(ctx) && this.verdict.known === undefined;
  }

  private pinnedPassThrough(ctx: CallContext): boolean {
    return ctx.era === this.era && !(ctx.era === 'modern' && ctx.method === 'server/discover');
  }

  /** The first calls, while the upstream's era is being found out. */
  private async afterVerdict(ctx: CallContext): Promise<Outcome> {
    let profile: UpstreamProfile;
    try {
      profile = await this.verdict.get();
    } catch (err) {
      const error = toGatewayError(err, this.name);
      this.log.warn('upstream call failed', { code: error.code, err: error.cause ?? error.message, callId: ctx.callId });
      return refused(failure(error));
    }
    return this.routed(ctx, profile);
  }

  /** Bridged across eras, answered here (server/discover) or passed through, by the client's era and the upstream's. */
  private routed(ctx: CallContext, profile: UpstreamProfile): Promise<Outcome> {
    const bridge = this.bridgeFor(ctx, profile);
    if (bridge !== undefined) return bridge.handle(ctx);
    if (ctx.era === 'modern' && profile.era === 'modern' && ctx.method === 'server/discover' && ctx.kind === 'request') return Promise.resolve(this.answerDiscover(ctx, profile));
    if (ctx.method === 'initialize' && this.era === 'auto') return this.passThrough.forward(ctx).then((outcome) => this.afterInitialize(outcome));
    return this.passThrough.forward(ctx);
  }

  /** The era bridge that serves this call, if one does (else the pass-through, or Gatehouse's own discover). */
  private bridgeFor(ctx: CallContext, profile: UpstreamProfile): CallHandler | undefined {
    if (ctx.era === 'modern' && profile.era === 'legacy') return this.modernBridge;
    if (ctx.era === 'legacy' && profile.era === 'modern' && !profile.alsoLegacy) return this.legacyBridge;
    return undefined;
  }

  /** The legacy clients' sessions it bridges to a modern server, judged again after a reload (gateway.ts). */
  rejudgeSubscriptions(mayKeep: SubscriptionJudge): Promise<void> {
    return this.legacyBridge.rejudgeSubscriptions(mayKeep);
  }

  /** A resources/unsubscribe in the client's session, under an id of Gatehouse's (see Upstream.unsubscribeSession). */
  async unsubscribeSession(sessionId: string, version: string, uri: string): Promise<boolean> {
    const request = { jsonrpc: '2.0' as const, id: `gatehouse-unsubscribe-${randomUUID()}`, method: 'resources/unsubscribe', params: { uri } };
    try {
      const reply = await this.messages.post(request, { 'mcp-session-id': sessionId, ...protocolVersionHeader(version) });
      if (reply.status >= 300) return false;
      for await (const message of reply.messages) if ((message as { id?: unknown }).id === request.id) return (message as { error?: unknown }).error === undefined;
      return false;
    } catch (err) {
      this.log.warn('the upstream could not be asked to drop a subscription its session holds', { err });
      return false;
    }
  }

  /** Every era bridge refuses core tasks; the pass-through carries them (see Upstream.refusesCoreTasks). */
  async refusesCoreTasks(ctx: CallContext): Promise<boolean> {
    if (this.pinnedPassThrough(ctx)) return false;
    try {
      return this.bridgeFor(ctx, this.verdict.known ?? (await this.verdict.get())) !== undefined;
    } catch {
      return false;
    }
  }

  /**
   * A legacy client's initialize that the upstream refuses with 400 (a legacy server redeployed as a modern
   * one refuses the handshake): the next request probes the upstream's era again, rather than waiting for
   * the verdict's periodic check. A client's own bad initialize gets a 400 too, so a verdict less than a
   * second old is kept: refused handshakes cannot make the upstream be probed more than once a second.
   * Only initialize is looked at; every other answer is passed on unread.
   */
  private afterInitialize(outcome: Outcome): Outcome {
    if (outcome.kind === 'relay' && outcome.status === 400) this.verdict.invalidate(REPROBE_AFTER_REFUSED_INIT_MS);
    return outcome;
  }

  /**
   * The era detected so far, or the one `era` pins: a client of that era is passed through without a probe
   * (pinnedPassThrough), so no verdict may ever come. Until 5 December a pinned upstream's era stayed unknown
   * until something probed it, and SingleUpstream, which holds the pass-through's listening streams and notes
   * its legacy sessions' subscriptions for the client of the upstream's own era, held and noted none.
   */
  knownEra(): 'modern' | 'legacy' | undefined {
    return this.verdict.known?.era ?? (this.era === 'auto' ? undefined : this.era);
  }

  /**
   * A client of the pinned era is passed through (pinnedPassThrough), and so is one of an era the verdict
   * says the upstream speaks: a legacy client of a dual-era server too (bridgeFor bridges only a modern
   * server that is not also legacy). Until 5 December SingleUpstream asked knownEra(), 'modern' for a
   * dual-era server, and held none of its legacy clients' GET streams nor noted their subscriptions.
   */
  speaksEra(era: ClientEra): boolean {
    return era === this.era || this.verdict.speaks(era, this.era);
  }

  async modernFace(): Promise<ModernFace> {
    return modernFaceOf(await this.verdict.get(), this.messages, () => this.modernBridge.asModernUpstream(), true);
  }


  async ready(): Promise<boolean> {
    // Reachable means an HTTP exchange completes; any status counts, the upstream answered. The probe is a
    // POST of server/discover, which every era accepts as a request (a legacy server refuses it with a 4xx).
    // Without a token the upstream cannot take traffic, and is not sent an unauthenticated probe either.
    try {
      const auth = this.credentials.current() ?? (await this.credentials.headers());
      const { statusCode, body } = await this.tunables.calls.request({
        path: this.path,
        method: 'POST',
        headers: { ...auth, ...READINESS_PROBE_HEADERS },
        body: READINESS_PROBE_BODY,
        headersTimeout: 2000,
        signal: AbortSignal.timeout(3000),
      });
      if (statusCode === 401) this.credentials.invalidate(auth);
      await body.dump();
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.modernBridge.close(), this.legacyBridge.close()]);
    this.credentials.close();
    // The edge has drained: what is still open upstream has no client left (parked or orphaned streams).
    await this.tunables.close();
  }

  /**
   * server/discover is answered by Gatehouse (2026-07-28/server/discover.mdx): the versions it serves and the
   * upstream's capabilities and identity, with cache hints.
   */
  private answerDiscover(ctx: CallContext, profile: UpstreamProfile & { era: 'modern' }): Outcome {
    const id = (ctx.message as JsonRpcRequest).id;
    const discover = withoutExtensions(profile.discover);
    const result: Record<string, unknown> = { ...discover, supportedVersions: [...MODERN_VERSIONS], resultType: 'complete', ttlMs: 60_000, cacheScope: 'public' };
    return json({ jsonrpc: '2.0', id, result });
  }

}
