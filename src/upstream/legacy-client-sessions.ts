// The legacy sessions Gatehouse opens on a legacy upstream on behalf of modern clients. Legacy capabilities
// are fixed per session while modern ones travel per request, so sessions are pooled by the capability set
// declared (GATEWAY-REQUIREMENTS §16.1 "Session management"). A session the upstream ended is replaced.

import { GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { JsonRpcResponse } from '../protocol/jsonrpc.js';
import { LATEST_LEGACY_VERSION, isLegacyVersion } from '../protocol/versions.js';
import { GATEHOUSE_CLIENT_INFO } from './era-probe.js';
import type { UpstreamMessages } from '../pipeline/ports.js';
import { canonicalJson } from '../protocol/canonical-json.js';

export interface LegacyClientSession {
  /** The upstream's Mcp-Session-Id, when it issued one. */
  id?: string;
  version: string;
  init: Record<string, unknown>;
  key: string;
  /** Whose session this is (see principalKey); callers never share an upstream session. */
  owner: string;
  /** The level last set with logging/setLevel on this session. */
  logLevel?: string;
}

/** Distinct capability sets kept open at once; the oldest is ended past this. */
const MAX_POOLED = 64;

/** How long shutdown waits for sessions to end cleanly upstream. */
const CLOSE_WAIT_MS = 1_000;

export class LegacyClientSessions {
  private readonly pool = new Map<string, { promise: Promise<LegacyClientSession>; session?: LegacyClientSession }>();

  constructor(private readonly client: UpstreamMessages, private readonly log: Logger) {}

  /**
   * The session for this caller and capability set, opened on first use. Sessions are keyed by both
   * (GATEWAY-REQUIREMENTS §Session management): an upstream may keep per-session state, which must never
   * be shared between callers.
   */
  get(capabilities: Record<string, unknown>, owner = ''): Promise<LegacyClientSession> {
    const key = `${owner}\u0000${canonicalJson(capabilities)}`;
    const existing = this.pool.get(key);
    if (existing) return existing.promise;
    const entry: { promise: Promise<LegacyClientSession>; session?: LegacyClientSession } = { promise: this.open(key, capabilities, owner) };
    entry.promise.then(
      (s) => (entry.session = s),
      () => {
        if (this.pool.get(key) === entry) this.pool.delete(key);
      },
    );
    this.pool.set(key, entry);
    if (this.pool.size > MAX_POOLED) {
      const [oldestKey, oldest] = this.pool.entries().next().value!;
      this.pool.delete(oldestKey);
      void oldest.promise.then((s) => this.end(s), () => {});
    }
    return entry.promise;
  }

  /** Drops a session the upstream no longer knows (it answered 404), so the next get re-initializes. */
  discard(session: LegacyClientSession): void {
    if (this.pool.get(session.key)?.session === session) this.pool.delete(session.key);
  }

  headersFor(session: LegacyClientSession): Record<string, string> {
    const h: Record<string, string> = {};
    if (session.id !== undefined) h['mcp-session-id'] = session.id;
    // MCP-Protocol-Version exists from 2025-06-18 on (2025-11-25/basic/transports.mdx §Protocol Version Header).
    if (session.version !== '2025-03-26' && session.version !== '2024-11-05') h['mcp-protocol-version'] = session.version;
    return h;
  }

  async closeAll(): Promise<void> {
    const all = [...this.pool.values()];
    this.pool.clear();
    // A session still opening against an upstream that does not answer must not hold shutdown: its
    // connection is destroyed when the upstream's pool closes.
    const ended = Promise.all(all.map((e) => e.promise.then((s) => this.end(s), () => {})));
    await Promise.race([ended, new Promise<void>((r) => setTimeout(r, CLOSE_WAIT_MS).unref())]);
  }

  private async open(key: string, capabilities: Record<string, unknown>, owner: string): Promise<LegacyClientSession> {
    const reply = await this.client.post(
      { jsonrpc: '2.0', id: 'gatehouse-init', method: 'initialize', params: { protocolVersion: LATEST_LEGACY_VERSION, capabilities, clientInfo: GATEHOUSE_CLIENT_INFO } },
      {},
    );
    let response: JsonRpcResponse | undefined;
    for await (const m of reply.messages) {
      if ('id' in m && m.id === 'gatehouse-init') response = m as JsonRpcResponse;
    }
    const version = response?.result?.protocolVersion;
    if (!response?.result || typeof version !== 'string' || !isLegacyVersion(version)) {
      throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.client.upstream}" refused initialize (HTTP ${reply.status})`, this.client.upstream);
    }
    const id = reply.headers['mcp-session-id'];
    const session: LegacyClientSession = { id: typeof id === 'string' ? id : undefined, version, init: response.result, key, owner };
    // 2025-11-25/basic/lifecycle.mdx §Initialization: the client MUST send notifications/initialized.
    const ack = await this.client.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, this.headersFor(session));
    for await (const _ of ack.messages) {
      // drain
    }
    this.log.info('legacy upstream session opened for modern clients', { version, capabilities, owner: owner === '' ? 'gatehouse' : 'caller' });
    return session;
  }

  private async end(session: LegacyClientSession): Promise<void> {
    if (session.id !== undefined) await this.client.deleteSession(session.id, session.version);
  }
}
