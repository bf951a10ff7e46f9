// Serves every client era from a stdio MCP server, in one of three `processes` modes:
// - `shared`: clients are held by Gatehouse and multiplexed onto one child per caller and declared
//   capability set (the modern-client bridge's pooled sessions), ids and progress tokens remapped;
// - `single`: the same, onto one child for everyone (servers that keep state in files and must not run twice);
// - `perSession`: each legacy client session gets its own child, initialized with the client's own
//   `initialize`, so capabilities, elicitation and logging levels stay the client's. Messages the child sends
//   are routed to the POST stream of the request in flight, or to the session's GET stream
//   (2025-11-25/basic/transports.mdx §Sending Messages, §Listening).
// In every mode one caller means one child (issue 15): the era probe's child becomes the first session's,
// Gatehouse's own lists go to a session that is already open, and children of ended sessions stop after
// `sessions.idleTimeoutMs`.

import type { StdioUpstreamConfig } from '../config/types.js';
import { asGatewayError, failure, GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { CallStream } from '../pipeline/call-stream.js';
import type { CallContext } from '../pipeline/context.js';
import { ACCEPTED, json, refused, type Outcome } from '../pipeline/outcome.js';
import type { ModernFace, SubscriptionJudge, Upstream, UpstreamProfile } from '../pipeline/ports.js';
import { ErrorCode, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import { canonicalJson } from '../protocol/canonical-json.js';
import { type BridgedProfile, bridgedProfile, LegacyClientBridge } from './bridge-legacy-client.js';
import { ModernClientBridge } from './bridge-modern-client.js';
import { EraVerdict, gatehouseInitializeParams, probeUpstream } from './era-probe.js';
import { covers, type LegacyClientSession, type PoolOptions } from './legacy-client-sessions.js';
import { StdioMessages, stdioChannel } from './stdio-messages.js';
import { StdioSession } from './stdio-session.js';
import { StartBackoff } from './start-backoff.js';
import { StdioTunables } from './stdio-tunables.js';
import type { ChannelFactory, MessageChannel } from './channel.js';
import { resolveSession, sessionCapRefusal, SessionTable } from './session-table.js';
import { modernFaceOf } from './modern-face.js';
import { isObject, withoutExtensions } from '../protocol/era-shapes.js';
import { META_SERVER_INFO } from '../protocol/methods.js';
import { upstreamMessage } from '../protocol/trace-context.js';
import type { ClientEra } from '../protocol/versions.js';
import { KEEP, verdictOn, type AnsweredRequest } from '../protocol/answer-stream-rule.js';

/**
 * What the one child of `processes: single` declares at initialize: the server requests Gatehouse can carry
 * to a caller. A caller that did not declare one gets the bridge's refusal (elicitation: cancel; sampling:
 * method not found). Not roots: a server may change what it serves by its client's roots.
 */
const SINGLE_CAPABILITIES = { elicitation: {}, sampling: {} };

/** A `perSession` client session, as Gatehouse's own reads may borrow it. */
interface Host {
  session: StdioSession;
  /** The client's declared capabilities, and as canonical JSON. */
  declared: Record<string, unknown>;
  capabilities: string;
  version: string;
  init: Record<string, unknown>;
  /** The session id Gatehouse's reads use on it, once lent. */
  guest?: LegacyClientSession;
}

export class StdioUpstream implements Upstream {
  readonly transport: 'stdio' | 'sse';
  private readonly channel: ChannelFactory;
  readonly name: string;
  private readonly sessions: SessionTable<StdioSession>;
  private readonly log: Logger;
  private lastStartOk: boolean | undefined;

  private readonly messages: StdioMessages;
  private readonly verdict: EraVerdict;
  private readonly modernBridge: ModernClientBridge;
  private readonly legacyBridge: LegacyClientBridge;
  private readonly sharedBridge: LegacyClientBridge;
  /** Live `perSession` client sessions by id. */
  private readonly hosts = new Map<string, Host>();
  /** A perSession legacy client's initialize params while its initialize waits for the era probe (see verdictFor). */
  private probeInitialize?: Record<string, unknown>;
  /** sessions.inputTimeoutMs: how long a perSession call's clock waits for its client's answer. */
  private readonly inputTimeoutMs: number;
  /**
   * perSession children started for a client's initialize and not yet a session's: in no table, so close()
   * stops them from here, or one that answered after the close would run on in a closed table.
   */
  private readonly starting = new Set<MessageChannel>();
  /** The backoff of new perSession children after failed ones (start-backoff.ts). */
  private readonly starts: StartBackoff;
  private closed = false;
  /** The limits a reload changes in place (retune). */
  private readonly tunables: StdioTunables;
  /**
   * Has a `perSession` client's child drop a subscription (see Upstream.unsubscribeSession): there a legacy
   * client's session is a child of its own, which holds its subscriptions as an HTTP upstream's session
   * does, and the single upstream's pass-through notes them for a reload to judge again. Absent in the
   * other modes, whose legacy sessions are the shared bridge's, judged by rejudgeSubscriptions: so the
   * pass-through notes none of theirs. Until 5 December a perSession child went on watching, and its client
   * hearing of, a URI a reload's rules then blocked.
   */
  readonly unsubscribeSession?: (sessionId: string, version: string, uri: string) => Promise<boolean>;

  constructor(
    private readonly config: StdioUpstreamConfig,
    limits: { max: number; idleTimeoutMs: number; inputTimeoutMs: number },
    log: Logger,
    /** Seconds per answered request to the child (metrics). */
    observe?: (seconds: number) => void,
    /** Another kind of "child": an HTTP+SSE server's sessions (sse-upstream.ts). */
    other?: { transport: 'sse'; channel: ChannelFactory },
  ) {
    this.name = config.name;
    this.inputTimeoutMs = limits.inputTimeoutMs;
    this.log = log.child({ upstream: config.name });
    // Read at each use by the children, the backoffs and the session table, so retune reaches them all.
    this.tunables = new StdioTunables(config, limits);
    this.starts = new StartBackoff(config.name, this.tunables.restart, this.log);
    this.transport = other?.transport ?? 'stdio';
    this.channel = other?.channel ?? (() => stdioChannel(config, this.log, observe, this.tunables));
    this.messages = new StdioMessages({ ...config, restart: this.tunables.restart }, this.log, observe, { idleTimeoutMs: limits.idleTimeoutMs, channel: this.channel });
    // The server is the command Gatehouse runs: its era is kept until a bridge sees another one.
    this.verdict = new EraVerdict(async () => {
      const profile = await this.probe(this.probeInitialize);
      this.log.info('upstream era detected', { era: profile.era, version: profile.version });
      if (profile.era === 'legacy') void this.messages.releaseShared();
      return profile;
    }, Infinity);
    const legacyProfile = (): UpstreamProfile & { era: 'legacy' } => this.verdict.known as UpstreamProfile & { era: 'legacy' };
    const pool: Omit<PoolOptions, 'onEnd'> =
      config.processes === 'single'
        ? { idleTimeoutMs: limits.idleTimeoutMs, single: SINGLE_CAPABILITIES }
        : { idleTimeoutMs: limits.idleTimeoutMs, shareOwnReads: true, ...(config.processes === 'perSession' ? { borrow: (caps: Record<string, unknown>) => this.borrow(caps) } : {}) };
    this.modernBridge = new ModernClientBridge(this.messages, legacyProfile, limits.inputTimeoutMs, () => this.verdict.invalidate(), this.log, pool);
    // Served as bridgeFor routes: a modern server, in perSession mode only one that is not also legacy.
    this.legacyBridge = new LegacyClientBridge(this.messages, () => bridgedProfile(this.verdict.known, (p) => config.processes !== 'perSession' || !p.alsoLegacy), limits, () => this.verdict.invalidate(), false, this.log);
    this.sharedBridge = new LegacyClientBridge(this.modernBridge.asModernUpstream(), () => this.legacyAsModern(), limits, () => this.verdict.invalidate(), false, this.log);
    // Every session is a child process, so the upstream's own cap applies on top of the global one.
    this.sessions = new SessionTable(this.tunables.sessions, (id, reason) => {
      this.log.info('session ended', { session: id.slice(0, 8), reason });
      this.releaseHost(id);
    });
    if (config.processes === 'perSession') this.unsubscribeSession = (sessionId, _version, uri) => this.hosts.get(sessionId)?.session.unsubscribe(uri) ?? Promise.resolve(false);
  }

  /**
   * Takes a reload's new `timeouts`, `restart` and `maxSessions` (an entry that differs from this one's in
   * those, or in `uriPrefixes`, which the catalog reads): children, sessions and calls in flight go on.
   */
  retune(config: StdioUpstreamConfig): void {
    this.tunables.apply(config);
  }

  async handle(ctx: CallContext): Promise<Outcome> {
    // In perSession mode, unless the server is pinned legacy and so is the client, the era verdict decides:
    // legacy clients of a legacy or dual-era server get their own process per session, below. Every other
    // pair, and every pair in the shared and single modes, is bridged.
    if (this.needsVerdict(ctx)) {
      let profile: UpstreamProfile;
      try {
        profile = this.verdict.known ?? (await this.verdictFor(ctx));
      } catch (err) {
        return refused(failure(asGatewayError(err, 'GW_ERR_UPSTREAM_EXITED', this.log, { upstream: this.name, callId: ctx.callId })));
      }
      const bridge = this.bridgeFor(ctx, profile);
      if (bridge !== undefined) return bridge.handle(ctx);
      if (ctx.era === 'modern') return this.forwardModern(ctx);
    }
    if (ctx.httpMethod === 'POST' && ctx.kind === 'request' && ctx.method === 'initialize') {
      if (ctx.headers['mcp-session-id'] !== undefined) {
        return refused({ kind: 'transport', code: 'session_on_initialize', status: 400, rpcCode: ErrorCode.InvalidRequest, message: 'initialize starts a new session: send it without Mcp-Session-Id' });
      }
      return this.initialize(ctx);
    }
    const found = resolveSession(this.sessions, ctx);
    if ('outcome' in found) return found.outcome;
    if (ctx.httpMethod === 'GET') return found.session.openListenStream();
    return found.session.handlePost(ctx);
  }

  /** Every pair but a legacy client of a server pinned legacy in perSession mode waits for the era verdict. */
  private needsVerdict(ctx: CallContext): boolean {
    return this.config.processes !== 'perSession' || !(ctx.era === 'legacy' && this.config.era === 'legacy');
  }

  /** The era bridge that serves this call, if one does (else a modern child's stateless request, or a perSession child). */
  private bridgeFor(ctx: CallContext, profile: UpstreamProfile): ModernClientBridge | LegacyClientBridge | undefined {
    const bridged = this.config.processes !== 'perSession';
    if (ctx.era === 'modern' && profile.era === 'legacy') return this.modernBridge;
    // Shared and single processes: the legacy client is held by Gatehouse and bridged to the modern face of
    // the legacy server, whose sessions (children) carry many clients with remapped ids.
    if (bridged && ctx.era === 'legacy' && profile.era === 'legacy') return this.sharedBridge;
    if (ctx.era === 'legacy' && profile.era === 'modern' && (bridged || !profile.alsoLegacy)) return this.legacyBridge;
    return undefined;
  }

  /** Every era bridge refuses core tasks; a perSession child carries them (see Upstream.refusesCoreTasks). */
  async refusesCoreTasks(ctx: CallContext): Promise<boolean> {
    if (!this.needsVerdict(ctx)) return false;
    try {
      return this.bridgeFor(ctx, this.verdict.known ?? (await this.verdictFor(ctx))) !== undefined;
    } catch {
      return false;
    }
  }

  /**
   * The era found so far, or the one `era` pins: a perSession legacy client of a server pinned legacy gets
   * its child without a probe (needsVerdict), so no verdict may ever come. Until 5 December the era stayed
   * unknown until something probed it, and the single upstream's pass-through, which holds the listening
   * streams and notes the subscriptions of clients of the upstream's own era, held and noted none of theirs.
   */
  knownEra(): 'modern' | 'legacy' | undefined {
    return this.verdict.known?.era ?? (this.config.era === 'auto' ? undefined : this.config.era);
  }

  /**
   * As bridgeFor routes: the server's own era, and legacy too for a dual-era server in `perSession` mode, whose
   * legacy clients get children of their own (only that mode's probe asks the server for `alsoLegacy`; the
   * others bridge them to its modern face, and the verdict says false there).
   */
  speaksEra(era: ClientEra): boolean {
    return this.verdict.speaks(era, this.config.era);
  }

  /**
   * The legacy clients' sessions its bridges hold (to a modern child, or to a shared legacy one), judged
   * again after a reload (gateway.ts), one bridge after the other.
   */
  async rejudgeSubscriptions(mayKeep: SubscriptionJudge): Promise<void> {
    await this.legacyBridge.rejudgeSubscriptions(mayKeep);
    await this.sharedBridge.rejudgeSubscriptions(mayKeep);
  }

  async modernFace(): Promise<ModernFace> {
    return modernFaceOf(await this.verdict.get(), this.messages, () => this.modernBridge.asModernUpstream(), false);
  }


  async ready(): Promise<boolean> {
    // A bridged child that died on its own makes the upstream not ready until a call succeeds again.
    if (!this.messages.healthy) return false;
    if (this.lastStartOk !== undefined) return this.lastStartOk;
    if (this.messages.started) return true;
    // Nothing started yet: prove the command can be spawned, then stop it again.
    const probe = this.newProcess();
    try {
      await probe.start();
      this.lastStartOk = true;
    } catch {
      this.lastStartOk = false;
    } finally {
      await probe.stop(500);
    }
    return this.lastStartOk;
  }

  /**
   * The era verdict. A perSession legacy client's `initialize` that has to wait for the probe lends it its
   * params: the probe's child, initialized exactly as that client asked, then becomes the client's own.
   */
  private verdictFor(ctx: CallContext): Promise<UpstreamProfile> {
    const ownInitialize = this.config.processes === 'perSession' && ctx.era === 'legacy' && ctx.kind === 'request' && ctx.method === 'initialize';
    this.probeInitialize = ownInitialize ? ((ctx.message as JsonRpcRequest).params ?? {}) : undefined;
    try {
      return this.verdict.get(); // the probe reads probeInitialize before its first await
    } finally {
      this.probeInitialize = undefined;
    }
  }

  private async probe(initialize: Record<string, unknown> | undefined): Promise<UpstreamProfile> {
    const mode = this.config.processes;
    if (mode === 'perSession' && this.config.era === 'legacy') {
      // A live session already holds the server's InitializeResult: no child is started to ask again.
      for (const host of this.hosts.values()) if (!host.session.ended) return { era: 'legacy', version: host.version, init: host.init };
    }
    return probeUpstream(this.messages, this.config.era, {
      // Only perSession serves legacy clients of a dual-era server directly; the other modes bridge them.
      askLegacy: mode === 'perSession',
      // The params of the session the probe's child serves next: Gatehouse's own (shared, single) or the
      // waiting client's (perSession).
      initialize: initialize ?? gatehouseInitializeParams(mode === 'single' ? SINGLE_CAPABILITIES : {}),
      log: this.log,
    });
  }

  /**
   * A perSession client session Gatehouse's own reads (lists) may use, so listing costs no child: one whose
   * client declared the capabilities they ask with, else more (a session that declared less may list less).
   * Its list changes reach its own client, not Gatehouse, so they are not offered (the catalog then reads
   * lists each time instead of keeping them).
   */
  private borrow(capabilities: Record<string, unknown>): LegacyClientSession | undefined {
    const wanted = canonicalJson(capabilities);
    let pick: Host | undefined;
    for (const host of this.hosts.values()) {
      if (host.session.ended) continue;
      if (host.capabilities === wanted) {
        pick = host;
        break;
      }
      if (covers(host.declared, capabilities)) pick ??= host;
    }
    if (!pick) return undefined;
    const host = pick;
    host.guest ??= {
      id: this.messages.lend({ alive: () => !host.session.ended, request: (m, signal) => host.session.request(m, signal), send: (m) => host.session.send(m) }),
      version: host.version,
      init: withoutChangeNotices(host.init),
      key: '',
      owner: '',
    };
    return host.guest;
  }

  private releaseHost(id: string): void {
    const host = this.hosts.get(id);
    this.hosts.delete(id);
    if (host?.guest?.id !== undefined) this.messages.unlend(host.guest.id);
  }

  /**
   * The legacy server described as a modern one, for the shared-process bridge: undefined while its era is
   * being found again, 'other-era' once it was found modern (see BridgedProfile).
   */
  private legacyAsModern(): BridgedProfile {
    const known = this.verdict.known;
    if (known === undefined) return undefined;
    if (known.era !== 'legacy') return 'other-era';
    const init = known.init;
    const capabilities = isObject(init.capabilities) ? { ...init.capabilities } : {};
    delete capabilities.tasks;
    const discover: Record<string, unknown> = { supportedVersions: ['2026-07-28'], capabilities, _meta: { [META_SERVER_INFO]: init.serverInfo } };
    if (typeof init.instructions === 'string') discover.instructions = init.instructions;
    return { era: 'modern', version: '2026-07-28', discover, alsoLegacy: false };
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...[...this.starting].map((proc) => proc.stop()), this.sessions.closeAll(), this.modernBridge.close(), this.legacyBridge.close(), this.sharedBridge.close()]);
    await this.messages.close();
  }

  /** A modern client and a modern stdio server: each request on the shared process, stateless. */
  private async forwardModern(ctx: CallContext): Promise<Outcome> {
    if (ctx.kind !== 'request') {
      // Notifications go to the shared child and are answered at once.
      try {
        await this.messages.post(ctx.message!, {}, ctx.cancel, ctx.principal);
      } catch (err) {
        return refused(failure(asGatewayError(err, 'GW_ERR_UPSTREAM_EXITED', this.log, { upstream: this.name, callId: ctx.callId })));
      }
      return ACCEPTED;
    }
    const request = upstreamMessage(ctx) as JsonRpcRequest;
    const listen = request.method === 'subscriptions/listen';
    // A listen is a listening stream: SSE at once, with keep-alive comments while it is quiet.
    const channel = new CallStream({ requestId: request.id, mode: listen ? 'listen' : 'call', acceptsSse: ctx.acceptsSse });
    // Every listen is judged message by message (protocol/answer-stream-rule.ts), as the HTTP pass-through and
    // the catalog judge theirs: it carries only the kinds its filter asked for (subscriptions.mdx: the server
    // MUST NOT send others; until 5 December a listen with nothing withheld relayed whatever the child sent),
    // and no update of a URI the egress stage withheld: the child was never asked about it, so an update
    // naming one is a lie or a bug, and must not tell the client of a resource it was refused.
    const judged: AnsweredRequest | undefined = listen ? { id: request.id, progressToken: undefined, listen: true, asked: request.params?.notifications, withheld: ctx.withheldUris } : undefined;
    void (async () => {
      try {
        const reply = await this.messages.post(request, {}, ctx.cancel, ctx.principal);
        for await (const msg of reply.messages) {
          if ('method' in msg) {
            if (judged === undefined || verdictOn(msg, judged) === KEEP) channel.push(msg);
            else this.log.warn('a stdio upstream sent a listen a message its filter does not carry; it is dropped', { upstream: this.name, method: msg.method, callId: ctx.callId });
          } else return channel.finish(request.method === 'server/discover' ? discoverWithoutExtensions(msg as JsonRpcResponse) : (msg as JsonRpcResponse));
        }
        channel.fail(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.name}" did not answer`, this.name));
      } catch (err) {
        if (!ctx.cancel.aborted) channel.fail(asGatewayError(err, 'GW_ERR_UPSTREAM_EXITED', this.log, { upstream: this.name, callId: ctx.callId }));
      }
    })();
    return { kind: 'stream', stream: channel };
  }

  private async initialize(ctx: CallContext): Promise<Outcome> {
    // The session's place is held while its child starts and answers, so that a burst of initializes
    // starts no more children than maxSessions.
    const release = this.sessions.reserve();
    if (release === undefined) {
      return refused(sessionCapRefusal(`Upstream "${this.name}" holds as many sessions as it may (maxSessions), each starting or with a call in flight; retry later`));
    }
    try {
      return await this.open(ctx);
    } finally {
      release();
    }
  }

  private async open(ctx: CallContext): Promise<Outcome> {
    const initRequest = ctx.message as JsonRpcRequest;
    // The era probe's child, when it was initialized exactly as this client asks and saw nothing since.
    const spare = this.messages.takeSpare(initRequest.params ?? {});
    let proc: MessageChannel;
    let response: JsonRpcResponse;
    if (spare) {
      proc = spare.proc;
      response = { ...spare.response, id: initRequest.id };
    } else {
      // After children that failed at start, the next waits its turn (or is refused at once), as the shared
      // child's do: until 4 December every initialize started one at once, however many had just died.
      try {
        await this.starts.wait();
      } catch (err) {
        return refused(failure(asGatewayError(err, 'GW_ERR_UPSTREAM_EXITED', this.log, { upstream: this.name, callId: ctx.callId })));
      }
      if (this.closed) return refused(failure(closedError(this.name)));
      proc = this.newProcess();
      this.starting.add(proc);
      try {
        try {
          await proc.start();
          this.lastStartOk = true;
        } catch (err) {
          this.lastStartOk = false;
          this.starts.failed(String((err as Error)?.message ?? err));
          return refused(failure(asGatewayError(err, 'GW_ERR_UPSTREAM_EXITED', this.log, { upstream: this.name, callId: ctx.callId })));
        }
        try {
          response = await proc.request(initRequest);
          this.starts.succeeded();
        } catch (err) {
          void proc.stop();
          if (this.closed) return refused(failure(closedError(this.name)));
          this.starts.failed(String((err as Error)?.message ?? err));
          return refused(failure(asGatewayError(err, 'GW_ERR_UPSTREAM_EXITED', this.log, { upstream: this.name, callId: ctx.callId })));
        }
      } finally {
        this.starting.delete(proc);
      }
      if (response.error) {
        void proc.stop();
        return json(response);
      }
    }
    // Closed while the child started (the gateway shut down, a reload retired this upstream): not a session.
    if (this.closed) {
      void proc.stop();
      return refused(failure(closedError(this.name)));
    }
    const id = this.sessions.newId();
    const session = new StdioSession(id, proc, {
      policy: this.tunables.restart,
      // A crashed child is replaced under the same session: the client's own initialize is replayed, then
      // the initialized notification it sent the first time (2025-11-25/basic/lifecycle.mdx §Initialization).
      respawn: async () => {
        const next = this.newProcess();
        await next.start();
        let replay;
        try {
          replay = await next.request(initRequest);
        } catch (err) {
          // Timed out or died answering: this child is not adopted, so it is stopped here, or it runs on.
          void next.stop();
          throw err;
        }
        if (replay.error) {
          void next.stop();
          throw new GatewayError('GW_ERR_UPSTREAM_EXITED', `Upstream "${this.name}" refused the replayed initialize`, this.name);
        }
        next.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        this.log.info('session process restarted', { session: id.slice(0, 8), pid: next.pid });
        return next;
      },
      onRestart: (ok) => (this.lastStartOk = ok),
      onGiveUp: () => {
        this.sessions.forget(id, 'unknown');
        this.releaseHost(id);
      },
    }, this.log.child({ session: id.slice(0, 8) }), this.inputTimeoutMs, isObject(initRequest.params?.capabilities) ? initRequest.params.capabilities : {});
    this.sessions.add(id, session);
    const result = response.result ?? {};
    const declared = isObject(initRequest.params?.capabilities) ? initRequest.params.capabilities : {};
    this.hosts.set(id, {
      session,
      declared,
      capabilities: canonicalJson(declared),
      version: typeof result.protocolVersion === 'string' ? result.protocolVersion : '',
      init: result,
    });
    this.log.info('session started', { session: id.slice(0, 8), pid: proc.pid });
    return json(response, { 'mcp-session-id': id });
  }

  /**
   * A new child for a client session. Until the session adopts it (StdioSession), after its `initialize` is
   * answered, nothing else reads what it sends: a ping before that answer (2025-11-25/basic/lifecycle.mdx
   * §Initialization allows it, and basic/utilities/ping.mdx says to answer promptly) is answered here, or a
   * server that waits for the pong would time its initialize out, and a crashed session's replacement
   * would never come back.
   */
  private newProcess(): MessageChannel {
    const proc = this.channel();
    proc.onMessage = (msg) => {
      if ('method' in msg && msg.method === 'ping' && 'id' in msg && msg.id !== undefined) proc.send({ jsonrpc: '2.0', id: msg.id, result: {} });
    };
    return proc;
  }
}

/** The answer to an initialize whose child started as its upstream closed. */
function closedError(upstream: string): GatewayError {
  return new GatewayError('GW_ERR_SHUTTING_DOWN', `Upstream "${upstream}" closed while its process started`, upstream);
}

/** An InitializeResult without the list-change and subscription capabilities (see StdioUpstream.borrow). */
function withoutChangeNotices(init: Record<string, unknown>): Record<string, unknown> {
  const capabilities: Record<string, unknown> = isObject(init.capabilities) ? { ...init.capabilities } : {};
  for (const kind of ['tools', 'prompts', 'resources']) {
    const entry = capabilities[kind];
    if (!isObject(entry)) continue;
    const { listChanged: _listChanged, subscribe: _subscribe, ...rest } = entry;
    capabilities[kind] = rest;
  }
  return { ...init, capabilities };
}

/** The child's own discover answer, its extensions left out (era-shapes.ts withoutExtensions). */
function discoverWithoutExtensions(response: JsonRpcResponse): JsonRpcResponse {
  const result = response.result;
  if (result === undefined || result === null || typeof result !== 'object') return response;
  const stripped = withoutExtensions(result as Record<string, unknown>);
  return stripped === result ? response : { ...response, result: stripped };
}
