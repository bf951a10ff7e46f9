// Streamable HTTP upstream: one undici Pool per upstream, and the choice, per exchange, between the
// byte-for-byte pass-through (same era on both sides) and one of the era bridges, from the cached era
// verdict. It also answers server/discover and checks Mcp-Param-* headers for modern calls.

import { Pool } from 'undici';
import type { HttpUpstreamConfig } from '../config/types.js';
import { GatewayError } from '../errors.js';
import { sendJson, sendJsonRpcError } from '../edge/respond.js';
import type { Logger } from '../log/logger.js';
import { ErrorCode, idOf, type JsonRpcRequest } from '../protocol/jsonrpc.js';
import { MODERN_VERSIONS } from '../protocol/versions.js';
import { LegacyClientBridge } from './bridge-legacy-client.js';
import { ModernClientBridge } from './bridge-modern-client.js';
import { EraVerdict, probeUpstream, type UpstreamProfile } from './era-probe.js';
import { MessageClient } from './message-client.js';
import { checkParamHeaders } from '../protocol/param-headers.js';
import { ToolHeaderIndex } from './tool-header-index.js';
import { ArgumentSchemas, invalidArgumentsResult } from '../policy/argument-schemas.js';
import { META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION } from '../protocol/methods.js';
import { upstreamCredentials, type UpstreamCredentials } from './credentials.js';
import { toGatewayError } from './failures.js';
import { failExchange, PassThrough } from './passthrough.js';
import type { ModernFace } from '../pipeline/ports.js';
import type { McpExchange, Upstream } from './upstream.js';
import { modernFaceOf } from './modern-face.js';

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

export class HttpUpstream implements Upstream {
  readonly transport = 'http' as const;
  readonly name: string;
  private readonly era: HttpUpstreamConfig['era'];
  private readonly pool: Pool;
  private readonly path: string;
  /** The upstream's own credentials (configured headers, or a client-credentials token), on every request. */
  private readonly credentials: UpstreamCredentials;
  private readonly log: Logger;
  private readonly passThrough: PassThrough;
  private readonly messages: MessageClient;
  private readonly verdict: EraVerdict;
  private readonly modernBridge: ModernClientBridge;
  /** For modern upstreams: which tool arguments travel as Mcp-Param-* headers. */
  readonly toolHeaders: ToolHeaderIndex;
  private readonly schemas: ArgumentSchemas;
  private readonly legacyBridge: LegacyClientBridge;

  constructor(
    config: HttpUpstreamConfig,
    sessions: { max: number; idleTimeoutMs: number; inputTimeoutMs: number },
    log: Logger,
    private readonly onRefusal: (reason: string) => void = () => {},
    observeUpstream: (seconds: number) => void = () => {},
  ) {
    this.name = config.name;
    this.era = config.era;
    this.log = log.child({ upstream: config.name });
    const url = new URL(config.url);
    this.path = url.pathname + url.search;
    this.credentials = upstreamCredentials(config, this.log);
    this.pool = new Pool(url.origin, {
      connections: config.pool.connections,
      keepAliveTimeout: config.pool.keepAliveTimeoutMs,
      connect: { timeout: config.timeouts.connectMs },
      headersTimeout: config.timeouts.headersMs,
      bodyTimeout: config.timeouts.bodyMs,
    });
    this.schemas = new ArgumentSchemas(this.log);
    this.passThrough = new PassThrough(this.pool, this.path, this.credentials, config.era, this.name, this.log, observeUpstream);
    const messages = new MessageClient(this.pool, this.path, this.credentials, this.name, observeUpstream);
    this.messages = messages;
    this.verdict = new EraVerdict(async () => {
      const profile = await probeUpstream(messages, config.era);
      this.log.info('upstream era detected', { era: profile.era, version: profile.version, ...(profile.era === 'modern' ? { alsoLegacy: profile.alsoLegacy } : {}) });
      return profile;
    });
    this.toolHeaders = new ToolHeaderIndex(async (cursor) => {
      const version = MODERN_VERSIONS[0];
      const reply = await messages.post(
        { jsonrpc: '2.0', id: 'gatehouse-tools', method: 'tools/list', params: { ...(cursor !== undefined ? { cursor } : {}), _meta: { [META_PROTOCOL_VERSION]: version, [META_CLIENT_CAPABILITIES]: {} } } },
        { 'mcp-protocol-version': version, 'mcp-method': 'tools/list' },
        // Bounded: a call waits on this list at most once per refresh, never for a whole body timeout.
        AbortSignal.timeout(5_000),
      );
      for await (const m of reply.messages) {
        const result = (m as { id?: unknown; result?: { tools?: unknown[]; nextCursor?: string } }).result;
        if ((m as { id?: unknown }).id === 'gatehouse-tools' && result) return { tools: result.tools ?? [], nextCursor: result.nextCursor };
      }
      throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.name}" did not answer tools/list (HTTP ${reply.status})`, this.name);
    }, this.log);
    const legacyProfile = (): UpstreamProfile & { era: 'legacy' } => this.verdict.known as UpstreamProfile & { era: 'legacy' };
    const modernProfile = (): UpstreamProfile & { era: 'modern' } => this.verdict.known as UpstreamProfile & { era: 'modern' };
    this.modernBridge = new ModernClientBridge(messages, legacyProfile, sessions.inputTimeoutMs, () => this.verdict.invalidate(), this.log);
    this.legacyBridge = new LegacyClientBridge(messages, modernProfile, sessions, () => this.verdict.invalidate(), this.toolHeaders, this.log);
  }

  async handle(ex: McpExchange): Promise<void> {
    // A client of the era the upstream is pinned to needs no verdict: plain pass-through, no probe (except
    // that Gatehouse answers server/discover itself, from the upstream's own discover result).
    if (ex.era === this.era && !(ex.era === 'modern' && (isDiscover(ex) || isToolCall(ex)))) return this.passThrough.forward(ex);
    let profile = this.verdict.known;
    if (!profile) {
      try {
        profile = await this.verdict.get();
      } catch (err) {
        failExchange(ex, ex.kind === 'request' ? idOf(ex.message) : null, toGatewayError(err, this.name), this.log);
        return;
      }
    }
    if (ex.era === 'modern' && profile.era === 'legacy') return this.modernBridge.handle(ex);
    if (ex.era === 'legacy' && profile.era === 'modern' && !profile.alsoLegacy) return this.legacyBridge.handle(ex);
    if (ex.era === 'modern' && profile.era === 'modern' && isDiscover(ex)) {
      return this.answerDiscover(ex, profile);
    }
    if (ex.era === 'modern' && isToolCall(ex)) {
      // Headers first (a transport-level refusal), then the arguments (a result the model can act on). A
      // known tool without annotations needs no header check: the common case stays synchronous.
      const name = (ex.message as JsonRpcRequest).params?.name;
      const known = typeof name === 'string' ? this.toolHeaders.known(name) : undefined;
      const problem =
        known?.ok && known.headers.length === 0
          ? undefined
          : await this.paramHeaderProblem(ex).catch((err: unknown) => {
              this.log.warn('could not read the upstream tools to check Mcp-Param headers', { err });
              return undefined;
            });
      if (problem !== undefined) {
        this.onRefusal('param_header');
        ex.refusal = 'param_header';
        sendJsonRpcError(ex.res, 400, idOf(ex.message), ErrorCode.HeaderMismatch, `Header mismatch: ${problem}`, undefined, { 'x-gatehouse-call-id': ex.callId });
        return;
      }
      const invalid = this.argumentProblems(ex);
      if (invalid) {
        this.onRefusal('invalid_arguments');
        ex.refusal = 'invalid_arguments';
        sendJson(ex.res, 200, { jsonrpc: '2.0', id: idOf(ex.message), result: { ...invalid, resultType: 'complete' } }, { 'x-gatehouse-call-id': ex.callId });
        return;
      }
    }
    return this.passThrough.forward(ex);
  }

  /** The isError result for arguments that break the tool's inputSchema, when its list is already known. */
  private argumentProblems(ex: McpExchange): Record<string, unknown> | undefined {
    const params = (ex.message as JsonRpcRequest).params ?? {};
    if (typeof params.name !== 'string') return undefined;
    const problems = this.schemas.check(params.name, this.toolHeaders.inputSchema(params.name), params.arguments);
    return problems ? invalidArgumentsResult(params.name, problems) : undefined;
  }

  /**
   * streamable-http.mdx §Server Behavior for Custom Headers: Gatehouse processes the body, so it MUST check the
   * Mcp-Param-* headers the tool's x-mcp-header annotations imply. A failed check is retried once against a
   * fresh tools/list, since the tool may have changed.
   */
  private async paramHeaderProblem(ex: McpExchange): Promise<string | undefined> {
    const params = (ex.message as JsonRpcRequest).params ?? {};
    if (typeof params.name !== 'string') return undefined;
    for (const refresh of [false, true]) {
      const annotations = await this.toolHeaders.lookup(params.name, refresh);
      if (!annotations) return undefined; // unknown tool: the upstream answers that itself
      if (!annotations.ok) return `tool "${params.name}" has an invalid x-mcp-header annotation (${annotations.reason})`;
      const problem = checkParamHeaders(annotations.headers, params.arguments, ex.req.headers);
      if (problem === undefined) return undefined;
      if (refresh) return problem;
    }
    return undefined;
  }


  knownEra(): 'modern' | 'legacy' | undefined {
    return this.verdict.known?.era;
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
      const { statusCode, body } = await this.pool.request({
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
    const closed = this.pool.close().then(() => true, () => false);
    const timely = await Promise.race([closed, new Promise<boolean>((r) => setTimeout(() => r(false), 1000).unref())]);
    if (!timely) await this.pool.destroy().catch(() => {});
  }

  /**
   * server/discover is answered by Gatehouse (2026-07-28/server/discover.mdx): the versions it serves and the
   * upstream's capabilities and identity, with cache hints.
   */
  private answerDiscover(ex: McpExchange, profile: UpstreamProfile & { era: 'modern' }): void {
    const id = (ex.message as JsonRpcRequest).id;
    const discover = profile.discover;
    const result: Record<string, unknown> = { ...discover, supportedVersions: [...MODERN_VERSIONS], resultType: 'complete', ttlMs: 60_000, cacheScope: 'public' };
    sendJson(ex.res, 200, { jsonrpc: '2.0', id, result }, { 'x-gatehouse-call-id': ex.callId });
  }

}

function isToolCall(ex: McpExchange): boolean {
  return ex.kind === 'request' && (ex.message as JsonRpcRequest).method === 'tools/call';
}

function isDiscover(ex: McpExchange): boolean {
  return ex.kind === 'request' && (ex.message as JsonRpcRequest).method === 'server/discover';
}
