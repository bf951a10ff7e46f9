// Several upstreams as one: modern clients are answered from the catalog directly, legacy clients through
// the legacy bridge with the catalog standing in for a modern upstream (sessions, initialize, server
// requests on SSE all come from there).

import type { Principal } from '../pipeline/principal.js';
import type { Logger } from '../log/logger.js';
import type { AccessPolicy } from '../policy/access.js';
import { gatewayRefusalOf } from '../policy/argument-schemas.js';
import { Catalog } from '../catalog/catalog.js';
import type { PrefixMode } from '../catalog/public-names.js';
import { GatewayError } from '../errors.js';
import type { JsonRpcResponse } from '../protocol/jsonrpc.js';
import { META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION } from '../protocol/methods.js';
import { MODERN_VERSIONS } from '../protocol/versions.js';
import { LegacyClientBridge } from './bridge-legacy-client.js';
import type { UpstreamProfile } from './era-probe.js';
import { ResponseChannel } from './response-channel.js';
import type { ModernFace } from '../pipeline/ports.js';
import type { McpExchange, Upstream } from './upstream.js';

export class CatalogUpstream implements Upstream {
  readonly name = 'catalog';
  readonly transport = 'http' as const;
  private readonly catalog: Catalog;
  private readonly legacyBridge: LegacyClientBridge;
  private discovered?: UpstreamProfile & { era: 'modern' };

  constructor(
    private readonly members: readonly Upstream[],
    uriPrefixes: ReadonlyMap<Upstream, readonly string[]>,
    tools: { prefix: PrefixMode; outputValidation: 'enforce' | 'warn' | 'off' },
    limits: { max: number; idleTimeoutMs: number; inputTimeoutMs: number },
    log: Logger,
    access?: AccessPolicy,
  ) {
    this.catalog = new Catalog(members, uriPrefixes, tools.prefix, tools.outputValidation, log, access);
    this.legacyBridge = new LegacyClientBridge(this.catalog, () => this.discovered!, limits, () => (this.discovered = undefined), undefined, log);
  }

  async handle(ex: McpExchange): Promise<void> {
    if (ex.era === 'legacy') {
      try {
        // The legacy bridge answers initialize from the discover result, so it must exist first.
        this.discovered ??= { era: 'modern', version: MODERN_VERSIONS[0], discover: await this.catalog.discover(), alsoLegacy: false };
      } catch (err) {
        new ResponseChannel(ex).fail(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', String(err)));
        return;
      }
      return this.legacyBridge.handle(ex);
    }
    if (ex.kind !== 'request') {
      ex.res.writeHead(202, { 'x-gatehouse-call-id': ex.callId }).end();
      return;
    }
    const channel = new ResponseChannel(ex);
    try {
      const reply = await this.catalog.post(ex.message!, {}, ex.signal, ex.principal);
      for await (const msg of reply.messages) {
        if ('method' in msg) channel.push(msg);
        else {
          // Counted as a refusal (metrics, the request log), not as a successful call.
          ex.refusal ??= gatewayRefusalOf((msg as JsonRpcResponse).result);
          return channel.finish(msg as JsonRpcResponse);
        }
      }
      channel.fail(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', 'An upstream ended the call without answering'));
    } catch (err) {
      if (!ex.signal.aborted) channel.fail(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', String(err)));
    }
  }

  /** See Catalog.namesUnchanged: whether one member could be served by pass-through as it is. */
  namesUnchanged(): Promise<boolean> {
    return this.catalog.namesUnchanged();
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
    await this.legacyBridge.close();
    await Promise.all(this.members.map((m) => m.close()));
  }

  async modernFace(): Promise<ModernFace> {
    const discover = await this.catalog.discover();
    return { messages: this.catalog, capabilities: discover.capabilities as Record<string, unknown>, http: false };
  }
}
