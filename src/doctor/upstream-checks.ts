// Each upstream as Gatehouse will meet it: reachable (or, for stdio, started), the era its era probe
// detects and whether a pinned `era:` contradicts it, and its tools, listed through the same modern face the
// catalog uses (a legacy server through the modern-client bridge). The public names are judged over all
// upstreams together in upstream-findings.ts.

import { Pool } from 'undici';
import { isStdioUpstream, type UpstreamConfig } from '../config/types.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { ModernFace, UpstreamMessages, UpstreamProfile } from '../pipeline/ports.js';
import type { JsonRpcResponse } from '../protocol/jsonrpc.js';
import { META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION } from '../protocol/methods.js';
import { MODERN_VERSIONS } from '../protocol/versions.js';
import { ModernClientBridge } from '../upstream/bridge-modern-client.js';
import { upstreamCredentials } from '../upstream/credentials.js';
import { NoHandshakeError, probeUpstream } from '../upstream/era-probe.js';
import { sseSessions } from '../upstream/sse-upstream.js';
import { MessageClient } from '../upstream/message-client.js';
import { fixedLimits } from '../upstream/http-tunables.js';
import { modernFaceOf } from '../upstream/modern-face.js';
import { StdioMessages } from '../upstream/stdio-messages.js';
import { messageOf, printableCommand, printableUrl, withDeadline, type CheckLimits } from './finding.js';

type Tool = Record<string, unknown>;

/** What was learnt of one upstream; `failure` says where it stopped. */
export interface UpstreamInspection {
  config: UpstreamConfig;
  /** The URL, or the command line, as it may be printed. */
  where: string;
  /** How it was reached: a child process, Streamable HTTP, or the HTTP+SSE transport of 2024-11-05. */
  transport: 'stdio' | 'streamableHttp' | 'sse';
  profile?: UpstreamProfile;
  serverInfo?: unknown;
  /** Undefined when the server has no tools capability. */
  tools?: Tool[];
  failure?: { stage: 'reach' | 'era' | 'tools'; code?: string; message: string };
}

/** Pages read from one list at most (as the catalog does). */
const MAX_PAGES = 50;
const RETRY_MS = 500;

export async function inspectUpstream(config: UpstreamConfig, inputTimeoutMs: number, limits: CheckLimits, log: Logger): Promise<UpstreamInspection> {
  const sse = !isStdioUpstream(config) && config.transport === 'sse';
  let link: Link;
  try {
    link = connect(config, limits.timeoutMs, log, sse);
  } catch (err) {
    // A URL no parser takes (the config check fails it too): a finding for this upstream, not a crash of the whole run.
    const where = isStdioUpstream(config) ? printableCommand(config.command) : printableUrl(config.url);
    return { config, where, transport: isStdioUpstream(config) ? 'stdio' : sse ? 'sse' : 'streamableHttp', failure: { stage: 'reach', message: `cannot connect: ${messageOf(err)}` } };
  }
  const seen: UpstreamInspection = { config, where: link.where, transport: link.transport };
  const bridges: ModernClientBridge[] = [];
  const work = async (): Promise<void> => {
    // The probe the gateway runs with era: auto: its verdict is the truth a pin is measured against.
    try {
      try {
        seen.profile = await probeWaiting(link.messages, limits.waitMs);
      } catch (err) {
        // transport: auto, as the gateway does it: no Streamable HTTP handshake, so maybe an HTTP+SSE server.
        if (!(err instanceof NoHandshakeError && err.maybeSse && !isStdioUpstream(config) && config.transport === 'auto')) throw err;
        await link.close();
        link = connect(config, limits.timeoutMs, log, true);
        seen.transport = link.transport;
        seen.profile = await probeWaiting(link.messages, limits.waitMs);
      }
    } catch (err) {
      const code = err instanceof GatewayError ? err.code : undefined;
      const stage = code === 'GW_ERR_UPSTREAM_BAD_RESPONSE' ? 'era' : 'reach';
      seen.failure ??= { stage, message: messageOf(err), ...(code !== undefined ? { code } : {}) };
      return;
    }
    const profile = seen.profile;
    const face = modernFaceOf(profile, link.messages, () => {
      const bridge = new ModernClientBridge(link.messages, () => profile as UpstreamProfile & { era: 'legacy' }, inputTimeoutMs, () => {}, log);
      bridges.push(bridge);
      return bridge.asModernUpstream();
    }, link.http);
    seen.serverInfo = face.serverInfo;
    if (face.capabilities.tools === undefined) return;
    try {
      seen.tools = await listTools(face);
    } catch (err) {
      seen.failure ??= { stage: 'tools', message: messageOf(err) };
    }
  };
  try {
    // Several requests, each bounded by timeoutMs: their own timeouts speak first, this is the backstop.
    await withDeadline(work(), 2 * limits.timeoutMs + limits.waitMs, `checking upstream "${config.name}"`);
  } catch (err) {
    seen.failure ??= { stage: seen.profile ? 'tools' : 'reach', code: 'deadline', message: messageOf(err) };
  } finally {
    await Promise.all(bridges.map((b) => b.close().catch(() => {})));
    await link.close();
  }
  return seen;
}

interface Link {
  messages: UpstreamMessages;
  http: boolean;
  transport: UpstreamInspection['transport'];
  where: string;
  close(): Promise<void>;
}

/** The same message clients the gateway builds, with time limits no longer than the check's. */
function connect(config: UpstreamConfig, timeoutMs: number, log: Logger, sse: boolean): Link {
  if (isStdioUpstream(config)) {
    const messages = new StdioMessages({ ...config, timeouts: { requestMs: Math.min(config.timeouts.requestMs, timeoutMs), tools: {} } }, log);
    return { messages, http: false, transport: 'stdio', where: printableCommand(config.command), close: () => messages.close().catch(() => {}) };
  }
  if (sse) {
    const sessions = sseSessions({ ...config, timeouts: { ...config.timeouts, connectMs: Math.min(config.timeouts.connectMs, timeoutMs), headersMs: Math.min(config.timeouts.headersMs, timeoutMs) } }, log);
    const messages = new StdioMessages(sessions.config, log, undefined, { channel: sessions.channel });
    return {
      messages,
      http: false,
      transport: 'sse',
      where: printableUrl(config.url),
      close: async () => {
        await messages.close().catch(() => {});
        sessions.close();
      },
    };
  }
  const url = new URL(config.url);
  const pool = new Pool(url.origin, {
    connections: 2,
    connect: { timeout: Math.min(config.timeouts.connectMs, timeoutMs) },
    headersTimeout: Math.min(config.timeouts.headersMs, timeoutMs),
    bodyTimeout: Math.min(config.timeouts.bodyMs, timeoutMs),
  });
  const credentials = upstreamCredentials(config, log);
  const messages = new MessageClient(fixedLimits(pool), url.pathname + url.search, credentials, config.name);
  return {
    messages,
    http: true,
    transport: 'streamableHttp',
    where: printableUrl(config.url),
    close: async () => {
      credentials.close();
      await pool.destroy().catch(() => {});
    },
  };
}

/** The era probe, tried again while the upstream refuses connections (a server still starting), up to `waitMs`. */
async function probeWaiting(messages: UpstreamMessages, waitMs: number): Promise<UpstreamProfile> {
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      return await probeUpstream(messages, 'auto');
    } catch (err) {
      const retry = err instanceof GatewayError && err.code === 'GW_ERR_UPSTREAM_UNREACHABLE' && Date.now() + RETRY_MS < until;
      if (!retry) throw err;
      await new Promise((r) => setTimeout(r, RETRY_MS));
    }
  }
}

/** Every page of tools/list, asked as a modern client with no capabilities, like the catalog's own list. */
async function listTools(face: ModernFace): Promise<Tool[]> {
  const tools: Tool[] = [];
  const meta = { [META_PROTOCOL_VERSION]: MODERN_VERSIONS[0], [META_CLIENT_CAPABILITIES]: {} };
  const headers: Record<string, string> = face.http ? { 'mcp-protocol-version': MODERN_VERSIONS[0], 'mcp-method': 'tools/list' } : {};
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const id = `gatehouse-doctor-${page}`;
    const reply = await face.messages.post({ jsonrpc: '2.0', id, method: 'tools/list', params: { _meta: meta, ...(cursor !== undefined ? { cursor } : {}) } }, headers);
    let response: JsonRpcResponse | undefined;
    for await (const m of reply.messages) {
      if ('id' in m && m.id === id && !('method' in m)) {
        response = m as JsonRpcResponse;
        break;
      }
    }
    if (response?.error) throw new Error(`tools/list was refused: ${response.error.message} (${response.error.code})`);
    if (!response?.result) throw new Error(`tools/list got no answer (HTTP ${reply.status})`);
    const listed = response.result.tools;
    if (Array.isArray(listed)) for (const t of listed) if (t !== null && typeof t === 'object') tools.push(t as Tool);
    if (typeof response.result.nextCursor !== 'string') break;
    cursor = response.result.nextCursor;
  }
  return tools;
}
