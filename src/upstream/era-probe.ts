// Finds out which protocol era an HTTP upstream speaks (GATEWAY-REQUIREMENTS §5, after
// 2026-07-28/basic/transports/streamable-http.mdx §Backward Compatibility): try `server/discover`, read a
// 4xx body for a modern error, and fall back to a legacy `initialize` handshake. The verdict carries what
// the gateway needs to answer for the upstream: its DiscoverResult, or its InitializeResult.

import type { Era } from '../config/types.js';
import { GatewayError } from '../errors.js';
import { ErrorCode, type JsonRpcMessage, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import { META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION } from '../protocol/methods.js';
import { isLegacyVersion, LATEST_LEGACY_VERSION, MODERN_VERSIONS, type ClientEra } from '../protocol/versions.js';
import type { UpstreamMessages, UpstreamProfile } from '../pipeline/ports.js';
import { setOwn } from '../protocol/own-keys.js';
import { nestedDeeperThan } from '../protocol/value-depth.js';
import { answeringPings, pong } from './answering-pings.js';

export type { UpstreamProfile };

const MODERN_ERRORS = new Set<number>([ErrorCode.HeaderMismatch, ErrorCode.MissingClientCapability, ErrorCode.UnsupportedProtocolVersion]);
export const GATEHOUSE_CLIENT_INFO = { name: 'gatehouse', version: '0.1.0' };

/** The `initialize` params Gatehouse sends for a legacy session of its own, declaring `capabilities`. */
export function gatehouseInitializeParams(capabilities: Record<string, unknown>): Record<string, unknown> {
  return { protocolVersion: LATEST_LEGACY_VERSION, capabilities, clientInfo: GATEHOUSE_CLIENT_INFO };
}

export interface ProbeOptions {
  /**
   * Ask an unpinned modern server whether it also serves legacy clients (`alsoLegacy`). Only worth an
   * `initialize` where legacy clients would then reach it directly. Default true.
   */
  askLegacy?: boolean;
  /**
   * The params of the probe's `initialize` (default: Gatehouse's own, declaring no capabilities). A stdio
   * upstream passes those of the session the probe's child will serve next, so that child is reused.
   */
  initialize?: Record<string, unknown>;
  /** Told of capabilities left out of the profile (see boundedProfile), and of a pong that could not be sent. */
  log?: Warner;
}

type Warner = { warn(msg: string, fields?: Record<string, unknown>): void };
const SILENT: Warner = { warn: () => {} };

export async function probeUpstream(client: UpstreamMessages, pinned: Era, options: ProbeOptions = {}): Promise<UpstreamProfile> {
  const profile = await probeProfile(client, pinned, options);
  const dropped = boundedProfile(profile);
  if (dropped.length > 0) options.log?.warn(`capabilities left out of the upstream's profile: nested deeper than ${MAX_CAPABILITY_DEPTH} levels`, { upstream: client.upstream, capabilities: dropped.map((n) => n.slice(0, 100)) });
  return profile;
}

/**
 * How deep one capability may nest. Real ones are a few levels; the catalog merges every member's
 * capabilities by a recursive walk and writes them again, which a value nested thousands of levels deep
 * would overflow: one such upstream made every client's `initialize` and `server/discover` fail.
 */
const MAX_CAPABILITY_DEPTH = 32;

/** Removes from the profile's capabilities each one nested too deep to handle; their names. */
function boundedProfile(profile: UpstreamProfile): string[] {
  const result = profile.era === 'modern' ? profile.discover : profile.init;
  const capabilities = result.capabilities;
  if (capabilities === null || typeof capabilities !== 'object' || Array.isArray(capabilities)) return [];
  const dropped = Object.keys(capabilities).filter((name) => nestedDeeperThan((capabilities as Record<string, unknown>)[name], MAX_CAPABILITY_DEPTH));
  if (dropped.length === 0) return [];
  const kept: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(capabilities)) if (!dropped.includes(name)) setOwn(kept, name, value);
  if (profile.era === 'modern') profile.discover = { ...profile.discover, capabilities: kept };
  else profile.init = { ...profile.init, capabilities: kept };
  return dropped;
}

async function probeProfile(client: UpstreamMessages, pinned: Era, options: ProbeOptions): Promise<UpstreamProfile> {
  const params = options.initialize ?? gatehouseInitializeParams({});
  const log = options.log ?? SILENT;
  const legacyHandshake = (c: UpstreamMessages): Promise<UpstreamProfile> => handshake(c, params, log);
  if (pinned !== 'legacy') {
    const modern = await tryDiscover(client, log);
    if (modern.kind === 'modern') {
      // Unpinned, a modern server may serve legacy clients too; then they pass through unbridged.
      if (pinned === 'auto' && modern.profile.era === 'modern' && options.askLegacy !== false) modern.profile.alsoLegacy = await legacyHandshake(client).then(() => true, () => false);
      return modern.profile;
    }
    if (pinned === 'modern' && modern.kind === 'legacy' && (await legacyHandshake(client).then(() => true, () => false))) {
      throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${client.upstream}" is pinned to era: modern, but it answered like a legacy (session-based) server: it refused server/discover (${modern.detail}) and accepted initialize. Set era: auto (or legacy) for it; gatehouse doctor shows which era a server speaks`, client.upstream);
    }
    if (pinned === 'modern' || modern.kind === 'no_common_version') {
      throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${client.upstream}" did not answer server/discover as a 2026-07-28 server (${modern.detail})`, client.upstream);
    }
    return legacyHandshake(client);
  }
  try {
    return await legacyHandshake(client);
  } catch (err) {
    // Pinned legacy: a modern-only server refuses the handshake; say so rather than "answered neither".
    const modern = await tryDiscover(client, log).catch(() => undefined);
    if (modern?.kind === 'modern') {
      throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${client.upstream}" is pinned to era: legacy, but it answered like a modern (2026-07-28) server: it refused initialize and answered server/discover. Set era: auto (or modern) for it; gatehouse doctor shows which era a server speaks`, client.upstream);
    }
    throw err;
  }
}

/**
 * Whether an answer to `server/discover` came from a modern server: a DiscoverResult, or a recognised modern
 * error. Anything else is a legacy server's (stdio.mdx §Backward Compatibility).
 */
export function answersAsModern(response: JsonRpcResponse): boolean {
  return Array.isArray(response.result?.supportedVersions) || (response.error !== undefined && MODERN_ERRORS.has(response.error.code));
}

type DiscoverOutcome = { kind: 'modern'; profile: UpstreamProfile } | { kind: 'legacy' | 'no_common_version'; detail: string };

async function tryDiscover(client: UpstreamMessages, log: Warner): Promise<DiscoverOutcome> {
  const version = MODERN_VERSIONS[0];
  const reply = await client.post(
    { jsonrpc: '2.0', id: 'gatehouse-discover', method: 'server/discover', params: { _meta: { [META_PROTOCOL_VERSION]: version, [META_CLIENT_CAPABILITIES]: {} } } },
    { 'mcp-protocol-version': version, 'mcp-method': 'server/discover' },
  );
  // A legacy server may ping on this answer too; it is not in a session, so neither is the pong.
  const response = await firstResponse(reply.messages, (ping) => pong(client, {}, ping, log));
  const result = response?.result;
  if (reply.status === 200 && result && Array.isArray(result.supportedVersions)) {
    if (!(result.supportedVersions as unknown[]).includes(version)) {
      return { kind: 'no_common_version', detail: `it supports ${JSON.stringify(result.supportedVersions)}` };
    }
    return { kind: 'modern', profile: { era: 'modern', version, discover: result, alsoLegacy: false } };
  }
  const code = response?.error?.code;
  // A recognised modern error means a modern server that refused this request: do not fall back.
  if (code !== undefined && (MODERN_ERRORS.has(code) || (reply.status === 404 && code === ErrorCode.MethodNotFound))) {
    const supported = (response?.error?.data as { supported?: unknown } | undefined)?.supported;
    if (code === ErrorCode.UnsupportedProtocolVersion) return { kind: 'no_common_version', detail: `it supports ${JSON.stringify(supported)}` };
    return { kind: 'modern', profile: { era: 'modern', version, discover: { supportedVersions: [version], capabilities: {} }, alsoLegacy: false } };
  }
  return { kind: 'legacy', detail: `HTTP ${reply.status}` };
}

/**
 * A throwaway legacy session: learn the upstream's InitializeResult, then end the session (a stdio upstream
 * keeps the child, which saw only this `initialize`, for the next session opened with the same params).
 */
async function handshake(client: UpstreamMessages, params: Record<string, unknown>, log: Warner): Promise<UpstreamProfile> {
  const reply = await client.post({ jsonrpc: '2.0', id: 'gatehouse-probe', method: 'initialize', params }, {});
  const sessionId = reply.headers['mcp-session-id'];
  // A server may ping before it answers initialize (2025-11-25/basic/lifecycle.mdx §Initialization), and
  // waits for the pong (basic/utilities/ping.mdx: the receiver MUST respond promptly); unanswered, the probe
  // would wait out its timeout and judge the server by that. The pong goes to the session the answer's
  // headers named; the version is not agreed yet.
  const pongHeaders: Record<string, string> = typeof sessionId === 'string' ? { 'mcp-session-id': sessionId } : {};
  let response: JsonRpcResponse | undefined;
  try {
    response = await firstResponse(reply.messages, (ping) => pong(client, pongHeaders, ping, log));
  } catch (err) {
    endFailedSession(client, sessionId, params);
    throw err;
  }
  const result = response?.result;
  const version = result?.protocolVersion;
  if (!result || typeof version !== 'string' || !isLegacyVersion(version)) {
    endFailedSession(client, sessionId, params);
    throw new NoHandshakeError(client.upstream, reply.status);
  }
  if (typeof sessionId === 'string') await client.deleteSession(sessionId, version);
  return { era: 'legacy', version, init: result };
}

/**
 * Ends a session whose `initialize` failed (refused, answered unreadably, or not in time) on the upstream
 * that named it in the answer's headers: over stdio it is a child process, which otherwise ran on, one per
 * failed attempt, until Gatehouse stopped (2025-11-25/basic/transports.mdx §Session Management: a client
 * that no longer needs a session SHOULD end it). Not awaited: the failure is the caller's answer now.
 */
export function endFailedSession(client: UpstreamMessages, sessionId: unknown, params: Record<string, unknown>): void {
  if (typeof sessionId !== 'string') return;
  const asked = params.protocolVersion;
  void client.deleteSession(sessionId, typeof asked === 'string' ? asked : LATEST_LEGACY_VERSION).catch(() => {});
}

/** The first response among `messages`; a ping on the way is handed to `answer`. */
async function firstResponse(messages: AsyncGenerator<JsonRpcMessage, void, void>, answer: (ping: JsonRpcRequest) => void): Promise<JsonRpcResponse | undefined> {
  for await (const m of answeringPings(messages, answer)) {
    const msg = m as JsonRpcResponse & { method?: unknown };
    if (msg.method === undefined && ('result' in msg || 'error' in msg)) {
      return msg; // leaving the loop ends the stream
    }
  }
  return undefined;
}

/** How long a verdict is trusted before it is checked again in the background (HTTP upstreams). */
const VERDICT_TTL_MS = 5 * 60_000;

/**
 * The cached verdict for one upstream (GATEWAY-REQUIREMENTS §5: era is per server; cache it, re-probe on
 * failure). A failed probe is not cached; a stale verdict is served while a fresh probe runs.
 */
export class EraVerdict {
  private current?: { profile: UpstreamProfile; at: number };
  private inFlight?: Promise<UpstreamProfile>;

  /**
   * `ttlMs`: how long a verdict is trusted before a background re-probe. A stdio upstream's server is the
   * command Gatehouse runs, so its verdict is kept until a bridge sees another era (`Infinity`): re-probing
   * would only start children.
   */
  constructor(private readonly probe: () => Promise<UpstreamProfile>, private readonly ttlMs = VERDICT_TTL_MS) {}

  /** The verdict if known, without waiting. */
  get known(): UpstreamProfile | undefined {
    if (this.current && Date.now() - this.current.at > this.ttlMs) void this.refresh().catch(() => {});
    return this.current?.profile;
  }

  async get(): Promise<UpstreamProfile> {
    return this.known ?? this.refresh();
  }

  /**
   * Whether the upstream speaks `era` itself by the verdict so far (Upstream.speaksEra): its own era, and
   * legacy too for a dual-era server (`alsoLegacy`). While no verdict has come, only the era `pinned` (the
   * entry's `era`; 'auto' pins none). Property reads and comparisons: it is asked on calls.
   */
  speaks(era: ClientEra, pinned: ClientEra | 'auto'): boolean {
    const profile = this.known;
    if (profile === undefined) return era === pinned;
    return profile.era === era || (era === 'legacy' && profile.era === 'modern' && profile.alsoLegacy);
  }

  /**
   * Forgets the verdict: the next request probes again (the upstream answered like another era). A verdict
   * younger than `minAgeMs` is kept: where a client's own request could be the reason, it cannot make every
   * request probe the upstream again.
   */
  invalidate(minAgeMs = 0): void {
    if (this.current !== undefined && Date.now() - this.current.at < minAgeMs) return;
    this.current = undefined;
  }

  private refresh(): Promise<UpstreamProfile> {
    this.inFlight ??= this.probe().then(
      (profile) => {
        this.current = { profile, at: Date.now() };
        this.inFlight = undefined;
        return profile;
      },
      (err: unknown) => {
        this.inFlight = undefined;
        throw err;
      },
    );
    return this.inFlight;
  }
}

/**
 * Neither era's handshake worked over Streamable HTTP. With HTTP 400, 404 or 405 the server may speak the
 * older HTTP+SSE transport (2025-11-25 basic/transports.mdx §Backwards Compatibility): worth a GET.
 */
export class NoHandshakeError extends GatewayError {
  constructor(upstream: string, readonly initializeStatus: number) {
    super('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${upstream}" answered neither server/discover nor initialize (HTTP ${initializeStatus})`, upstream);
  }

  get maybeSse(): boolean {
    return this.initializeStatus === 400 || this.initializeStatus === 404 || this.initializeStatus === 405;
  }
}
