// Serves legacy Streamable HTTP clients from a stdio MCP server: each client session gets its own child
// process, initialized with the client's own `initialize`, so capabilities, elicitation and logging
// levels stay the client's. Messages the child sends are routed to the POST stream of the request in
// flight, or to the session's GET stream (2025-11-25/basic/transports.mdx §Sending Messages, §Listening).

import type { StdioUpstreamConfig } from '../config/types.js';
import { sendJsonRpcError } from '../edge/respond.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { ErrorCode, idOf, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import { LegacyClientBridge } from './bridge-legacy-client.js';
import { ModernClientBridge } from './bridge-modern-client.js';
import { EraVerdict, probeUpstream, type UpstreamProfile } from './era-probe.js';
import { StdioMessages } from './stdio-messages.js';
import { ResponseChannel } from './response-channel.js';
import { StdioSession } from './stdio-session.js';
import { StdioProcess } from './stdio-process.js';
import { resolveSession, SessionTable } from './session-table.js';
import type { ModernFace } from '../pipeline/ports.js';
import type { McpExchange, Upstream } from './upstream.js';
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
    this.legacyBridge = new LegacyClientBridge(this.messages, modernProfile, limits, () => this.verdict.invalidate(), undefined, this.log);
    this.sharedBridge = new LegacyClientBridge(this.modernBridge.asModernUpstream(), () => this.legacyAsModern(), limits, () => this.verdict.invalidate(), undefined, this.log);
    // Every session is a child process, so the upstream's own cap applies on top of the global one.
    this.sessions = new SessionTable({ max: Math.min(limits.max, config.maxSessions), idleTimeoutMs: limits.idleTimeoutMs }, (id, reason) => {
      this.log.info('session ended', { session: id.slice(0, 8), reason });
    });
  }

  async handle(ex: McpExchange): Promise<void> {
    const reply = { 'x-gatehouse-call-id': ex.callId };
    // Unless the server is pinned legacy and so is the client, the era verdict decides: legacy clients of a
    // legacy or dual-era server get their own process per session, below; other pairs are bridged.
    const shared = this.config.processes === 'shared';
    if (shared || !(ex.era === 'legacy' && this.config.era === 'legacy')) {
      let profile: UpstreamProfile;
      try {
        profile = this.verdict.known ?? (await this.verdict.get());
      } catch (err) {
        new ResponseChannel(ex).fail(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_EXITED', String(err), this.name));
        return;
      }
      if (ex.era === 'modern' && profile.era === 'legacy') return this.modernBridge.handle(ex);
      // Shared processes: the legacy client is held by Gatehouse and bridged to the modern face of the legacy
      // server, whose sessions (one child per capability set) carry many clients with remapped ids.
      if (shared && ex.era === 'legacy' && profile.era === 'legacy') return this.sharedBridge.handle(ex);
      if (ex.era === 'legacy' && profile.era === 'modern' && !profile.alsoLegacy) return this.legacyBridge.handle(ex);
      if (ex.era === 'modern') return this.forwardModern(ex);
    }
    if (ex.httpMethod === 'POST' && ex.kind === 'request' && (ex.message as JsonRpcRequest).method === 'initialize') {
      if (header(ex, 'mcp-session-id') !== undefined) {
        sendJsonRpcError(ex.res, 400, idOf(ex.message), ErrorCode.InvalidRequest, 'initialize starts a new session: send it without Mcp-Session-Id', undefined, reply);
        return;
      }
      await this.initialize(ex);
      return;
    }
    const session = resolveSession(this.sessions, ex);
    if (!session) return;
    if (ex.httpMethod === 'GET') {
      session.openListenStream(ex);
      return;
    }
    await session.handlePost(ex);
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
  private async forwardModern(ex: McpExchange): Promise<void> {
    const channel = new ResponseChannel(ex);
    try {
      const reply = await this.messages.post(ex.message!, {}, ex.signal);
      if (reply.status === 202) {
        ex.res.writeHead(202, { 'x-gatehouse-call-id': ex.callId }).end();
        return;
      }
      for await (const msg of reply.messages) {
        if ('method' in msg) channel.push(msg);
        else return channel.finish(msg as JsonRpcResponse);
      }
      channel.fail(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.name}" did not answer`, this.name));
    } catch (err) {
      if (!ex.signal.aborted) channel.fail(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_EXITED', String(err), this.name));
    }
  }

  private async initialize(ex: McpExchange): Promise<void> {
    this.sessions.makeRoom();
    const proc = this.newProcess();
    const channel = new ResponseChannel(ex);
    try {
      await proc.start();
      this.lastStartOk = true;
    } catch (err) {
      this.lastStartOk = false;
      channel.fail(err as GatewayError);
      return;
    }
    let response;
    try {
      response = await proc.request(ex.message as JsonRpcRequest);
    } catch (err) {
      void proc.stop();
      channel.fail(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_EXITED', String(err), this.name));
      return;
    }
    if (response.error) {
      void proc.stop();
      channel.finish(response);
      return;
    }
    const id = this.sessions.newId();
    const initRequest = ex.message as JsonRpcRequest;
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
    ex.bindSession(id);
    this.log.info('session started', { session: id.slice(0, 8), pid: proc.pid });
    channel.setHeader('mcp-session-id', id);
    channel.finish(response);
  }

  private newProcess(): StdioProcess {
    return new StdioProcess(
      { upstream: this.name, command: this.config.command, env: this.config.env, cwd: this.config.cwd, requestTimeoutMs: this.config.timeouts.requestMs, ...(this.observe ? { observe: this.observe } : {}) },
      this.log,
    );
  }
}

function header(ex: McpExchange, name: string): string | undefined {
  const v = ex.req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
