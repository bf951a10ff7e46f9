// Serves legacy Streamable HTTP clients from a stdio MCP server: each client session gets its own child
// process, initialized with the client's own `initialize`, so capabilities, elicitation and logging
// levels stay the client's. Messages the child sends are routed to the POST stream of the request in
// flight, or to the session's GET stream (2025-11-25/basic/transports.mdx §Sending Messages, §Listening).

import type { StdioUpstreamConfig } from '../config/types.js';
import { failure, GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { CallStream } from '../pipeline/call-stream.js';
import type { CallContext } from '../pipeline/context.js';
import { ACCEPTED, json, refused, type Outcome } from '../pipeline/outcome.js';
import type { ModernFace, Upstream, UpstreamProfile } from '../pipeline/ports.js';
import { ErrorCode, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import { LegacyClientBridge } from './bridge-legacy-client.js';
import { ModernClientBridge } from './bridge-modern-client.js';
import { EraVerdict, probeUpstream } from './era-probe.js';
import { StdioMessages } from './stdio-messages.js';
import { StdioSession } from './stdio-session.js';
import { StdioProcess } from './stdio-process.js';
import { resolveSession, SessionTable } from './session-table.js';
import { modernFaceOf } from './modern-face.js';
import { isObject } from '../protocol/era-shapes.js';
import { META_SERVER_INFO } from '../protocol/methods.js';


export class StdioUpstream implements Upstream {
  readonly transport = 'stdio' as const;
  readonly name: string;
  private readonly sessions: SessionTable<StdioSession>;
  private readonly log: Logger;
  private lastStartOk: boolean | undefined;

  private readonly messages: StdioMessages;
  private readonly verdict: EraVerdict;
  private readonly modernBridge: ModernClientBridge;
  private readonly legacyBridge: LegacyClientBridge;
  private readonly sharedBridge: LegacyClientBridge;

  constructor(
    private readonly config: StdioUpstreamConfig,
    limits: { max: number; idleTimeoutMs: number; inputTimeoutMs: number },
    log: Logger,
    /** Seconds per answered request to the child (metrics). */
    private readonly observe?: (seconds: number) => void,
  ) {
    this.name = config.name;
    this.log = log.child({ upstream: config.name });
    this.messages = new StdioMessages(config, this.log, observe);
    this.verdict = new EraVerdict(async () => {
      const profile = await probeUpstream(this.messages, config.era);
      this.log.info('upstream era detected', { era: profile.era, version: profile.version });
      if (profile.era === 'legacy') void this.messages.releaseShared();
      return profile;
    });
    const legacyProfile = (): UpstreamProfile & { era: 'legacy' } => this.verdict.known as UpstreamProfile & { era: 'legacy' };
    const modernProfile = (): UpstreamProfile & { era: 'modern' } => this.verdict.known as UpstreamProfile & { era: 'modern' };
    this.modernBridge = new ModernClientBridge(this.messages, legacyProfile, limits.inputTimeoutMs, () => this.verdict.invalidate(), this.log);
    this.legacyBridge = new LegacyClientBridge(this.messages, modernProfile, limits, () => this.verdict.invalidate(), false, this.log);
    this.sharedBridge = new LegacyClientBridge(this.modernBridge.asModernUpstream(), () => this.legacyAsModern(), limits, () => this.verdict.invalidate(), false, this.log);
    // Every session is a child process, so the upstream's own cap applies on top of the global one.
    this.sessions = new SessionTable({ max: Math.min(limits.max, config.maxSessions), idleTimeoutMs: limits.idleTimeoutMs }, (id, reason) => {
      this.log.info('session ended', { session: id.slice(0, 8), reason });
    });
  }

  async handle(ctx: CallContext): Promise<Outcome> {
    // Unless the server is pinned legacy and so is the client, the era verdict decides: legacy clients of a
    // legacy or dual-era server get their own process per session, below; other pairs are bridged.
    const shared = this.config.processes === 'shared';
    if (shared || !(ctx.era === 'legacy' && this.config.era === 'legacy')) {
      let profile: UpstreamProfile;
      try {
        profile = this.verdict.known ?? (await this.verdict.get());
      } catch (err) {
        return refused(failure(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_EXITED', String(err), this.name)));
      }
      if (ctx.era === 'modern' && profile.era === 'legacy') return this.modernBridge.handle(ctx);
      // Shared processes: the legacy client is held by Gatehouse and bridged to the modern face of the legacy
      // server, whose sessions (one child per capability set) carry many clients with remapped ids.
      if (shared && ctx.era === 'legacy' && profile.era === 'legacy') return this.sharedBridge.handle(ctx);
      if (ctx.era === 'legacy' && profile.era === 'modern' && !profile.alsoLegacy) return this.legacyBridge.handle(ctx);
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

  knownEra(): 'modern' | 'legacy' | undefined {
    return this.verdict.known?.era;
  }

  async modernFace(): Promise<ModernFace> {
    return modernFaceOf(await this.verdict.get(), this.messages, () => this.modernBridge.asModernUpstream(), false);
  }


  async ready(): Promise<boolean> {
    // A bridged child that died on its own makes the upstream not ready until a call succeeds again.
    if (!this.messages.healthy) return false;
    if (this.lastStartOk !== undefined) return this.lastStartOk;
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

  /** The legacy server described as a modern one, for the shared-process bridge's initialize answers. */
  private legacyAsModern(): UpstreamProfile & { era: 'modern' } {
    const init = (this.verdict.known as UpstreamProfile & { era: 'legacy' }).init;
    const capabilities = isObject(init.capabilities) ? { ...init.capabilities } : {};
    delete capabilities.tasks;
    const discover: Record<string, unknown> = { supportedVersions: ['2026-07-28'], capabilities, _meta: { [META_SERVER_INFO]: init.serverInfo } };
    if (typeof init.instructions === 'string') discover.instructions = init.instructions;
    return { era: 'modern', version: '2026-07-28', discover, alsoLegacy: false };
  }

  async close(): Promise<void> {
    await Promise.all([this.sessions.closeAll(), this.modernBridge.close(), this.legacyBridge.close(), this.sharedBridge.close()]);
    await this.messages.close();
  }

  /** A modern client and a modern stdio server: each request on the shared process, stateless. */
  private async forwardModern(ctx: CallContext): Promise<Outcome> {
    if (ctx.kind !== 'request') {
      // Notifications go to the shared child and are answered at once.
      try {
        await this.messages.post(ctx.message!, {}, ctx.signal);
      } catch (err) {
        return refused(failure(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_EXITED', String(err), this.name)));
      }
      return ACCEPTED;
    }
    const request = ctx.message as JsonRpcRequest;
    const channel = new CallStream({ requestId: request.id, mode: 'call', acceptsSse: ctx.acceptsSse });
    void (async () => {
      try {
        const reply = await this.messages.post(request, {}, ctx.signal);
        for await (const msg of reply.messages) {
          if ('method' in msg) channel.push(msg);
          else return channel.finish(msg as JsonRpcResponse);
        }
        channel.fail(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.name}" did not answer`, this.name));
      } catch (err) {
        if (!ctx.signal.aborted) channel.fail(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_EXITED', String(err), this.name));
      }
    })();
    return { kind: 'stream', stream: channel };
  }

  private async initialize(ctx: CallContext): Promise<Outcome> {
    this.sessions.makeRoom();
    const proc = this.newProcess();
    try {
      await proc.start();
      this.lastStartOk = true;
    } catch (err) {
      this.lastStartOk = false;
      return refused(failure(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_EXITED', String(err), this.name)));
    }
    let response;
    try {
      response = await proc.request(ctx.message as JsonRpcRequest);
    } catch (err) {
      void proc.stop();
      return refused(failure(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_EXITED', String(err), this.name)));
    }
    if (response.error) {
      void proc.stop();
      return json(response);
    }
    const id = this.sessions.newId();
    const initRequest = ctx.message as JsonRpcRequest;
    const session = new StdioSession(id, proc, {
      policy: this.config.restart,
      // A crashed child is replaced under the same session: the client's own initialize is replayed, then
      // the initialized notification it sent the first time (2025-11-25/basic/lifecycle.mdx §Initialization).
      respawn: async () => {
        const next = this.newProcess();
        await next.start();
        const replay = await next.request(initRequest);
        if (replay.error) {
          void next.stop();
          throw new GatewayError('GW_ERR_UPSTREAM_EXITED', `Upstream "${this.name}" refused the replayed initialize`, this.name);
        }
        next.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        this.log.info('session process restarted', { session: id.slice(0, 8), pid: next.pid });
        return next;
      },
      onRestart: (ok) => (this.lastStartOk = ok),
      onGiveUp: () => this.sessions.forget(id, 'unknown'),
    }, this.log.child({ session: id.slice(0, 8) }));
    this.sessions.add(id, session);
    this.log.info('session started', { session: id.slice(0, 8), pid: proc.pid });
    return json(response, { 'mcp-session-id': id });
  }

  private newProcess(): StdioProcess {
    return new StdioProcess(
      { upstream: this.name, command: this.config.command, env: this.config.env, cwd: this.config.cwd, requestTimeoutMs: this.config.timeouts.requestMs, ...(this.observe ? { observe: this.observe } : {}) },
      this.log,
    );
  }
}
