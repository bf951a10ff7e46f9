// An HTTP+SSE (2024-11-05) upstream (`transport: sse`). Each upstream session is one event stream
// (sse-channel.ts), which has the shape of a stdio child; so the session machinery of the stdio upstream
// serves it unchanged: legacy clients get a session each, modern clients are bridged (server requests on
// the stream become MRTR), the era is probed on a first session, and a dropped stream is replaced for the
// next call, as a crashed child is.

import type { HttpUpstreamConfig, StdioUpstreamConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { upstreamCredentials } from './credentials.js';
import { SseChannel } from './sse-channel.js';
import { compileToolTimeouts } from './tool-timeouts.js';
import { StdioUpstream } from './stdio-sessions.js';

/** A stream that drops is opened again at once, then after a growing pause, like a crashed child. */
const RESTART = { attempts: 6, firstDelayMs: 250 } as const;

export function createSseUpstream(config: HttpUpstreamConfig, limits: { max: number; idleTimeoutMs: number; inputTimeoutMs: number }, log: Logger, observe?: (seconds: number) => void): StdioUpstream {
  const sessions = sseSessions(config, log.child({ upstream: config.name }), observe);
  return new StdioUpstream(sessions.config, limits, log, observe, { transport: 'sse', channel: sessions.channel });
}

/** What the stdio session machinery needs to hold sessions with an SSE server: its settings, and a channel per session. */
export function sseSessions(config: HttpUpstreamConfig, log: Logger, observe?: (seconds: number) => void): { config: StdioUpstreamConfig; channel: () => SseChannel; close(): void } {
  const credentials = upstreamCredentials(config, log);
  // The stdio machinery reads these; `command` only names the server in logs.
  const asSessions: StdioUpstreamConfig = {
    name: config.name,
    command: [config.url],
    env: {},
    era: config.era,
    timeouts: { requestMs: config.timeouts.headersMs, tools: config.timeouts.tools },
    // Each session is an event stream held open on the server (the upstream's maxSessions, 32 by default).
    maxSessions: config.maxSessions,
    uriPrefixes: config.uriPrefixes,
    maxMessageBytes: config.maxMessageBytes,
    // One event stream per client session: server requests on it belong to that client alone.
    processes: 'perSession',
    restart: { ...RESTART },
  };
  // connectMs bounds the TCP/TLS connection alone; the stream's opening (the GET's headers, then its
  // endpoint event) is its first answer, and waits headersMs.
  // A request's answer comes on the stream, so there are no headers to wait for: requests wait headersMs
  // (the POST's own headers too), and a tool call as long as its answer may take over HTTP, the tool's own
  // limit or callMs, however long that is (a call of minutes answers after its progress, not before).
  const perTool = compileToolTimeouts(config.timeouts.tools);
  const callLimit = (tool: string): number => perTool?.(tool) ?? config.timeouts.callMs;
  const channel = (): SseChannel =>
    new SseChannel({ upstream: config.name, url: config.url, credentials, connectTimeoutMs: config.timeouts.connectMs, openTimeoutMs: config.timeouts.headersMs, requestTimeoutMs: config.timeouts.headersMs, toolTimeout: callLimit, maxEventBytes: config.maxMessageBytes, pingIntervalMs: config.timeouts.pingMs, busySilenceMs: config.timeouts.bodyMs, ...(observe ? { observe } : {}) }, log);
  return { config: asSessions, channel, close: () => credentials.close() };
}
