// An HTTP+SSE (2024-11-05) upstream (`transport: sse`). Each upstream session is one event stream
// (sse-channel.ts), which has the shape of a stdio child; so the session machinery of the stdio upstream
// serves it unchanged: legacy clients get a session each, modern clients are bridged (server requests on
// the stream become MRTR), the era is probed on a first session, and a dropped stream is replaced for the
// next call, as a crashed child is.

import type { HttpUpstreamConfig, StdioUpstreamConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { upstreamCredentials } from './credentials.js';
import { SseChannel, type SseChannelOptions } from './sse-channel.js';
import { compileToolTimeouts } from './tool-timeouts.js';
import { StdioUpstream } from './stdio-sessions.js';

/** A stream that drops is opened again at once, then after a growing pause, like a crashed child. */
const RESTART = { attempts: 6, firstDelayMs: 250 } as const;

type Limits = { max: number; idleTimeoutMs: number; inputTimeoutMs: number };

/**
 * An HTTP+SSE upstream: the stdio session machinery over event streams. A reload may change its `timeouts`
 * and `maxSessions` in place (retuneHttp); its `pool` is not read (each stream has a pool of its own).
 */
export class SseUpstream extends StdioUpstream {
  private readonly streams: SseSessions;

  constructor(sessions: SseSessions, limits: Limits, log: Logger, observe?: (seconds: number) => void) {
    super(sessions.config, limits, log, observe, { transport: 'sse', channel: sessions.channel });
    this.streams = sessions;
  }

  /**
   * Takes a reload's new `timeouts` and `maxSessions` (an entry that differs from this one's in those, in
   * `pool` or in `uriPrefixes`): the event streams open and their sessions go on. A request sent after it is
   * timed by the new limits, one in flight keeps its own; a stream opened after it is opened by the new ones,
   * and every stream, the open ones too, is watched (pinged) at the new timeouts.pingMs. A lower `maxSessions` ends no session at once (the table makes room at the next
   * initialize, as at its cap).
   */
  retuneHttp(config: HttpUpstreamConfig): void {
    this.retune(this.streams.retune(config));
  }
}

export function createSseUpstream(config: HttpUpstreamConfig, limits: Limits, log: Logger, observe?: (seconds: number) => void): SseUpstream {
  return new SseUpstream(sseSessions(config, log.child({ upstream: config.name }), observe), limits, log, observe);
}

/** What the stdio session machinery needs to hold sessions with an SSE server: its settings, and a channel per session. */
export interface SseSessions {
  config: StdioUpstreamConfig;
  channel: () => SseChannel;
  /** Takes the time limits of `config` for the channels, open ones included; returns its settings for the session machinery. */
  retune(config: HttpUpstreamConfig): StdioUpstreamConfig;
  close(): void;
}

export function sseSessions(config: HttpUpstreamConfig, log: Logger, observe?: (seconds: number) => void): SseSessions {
  const credentials = upstreamCredentials(config, log);
  // One object for every channel, which each reads at each use (the requests' limits, the watchdog's
  // silence) or when it opens (its connection and opening limits, its ping interval): a reload's new values
  // reach the open streams' next requests and the next streams. The ping interval is a timer's period, read
  // once, so a retune tells the open streams to take it again (retime).
  const options: SseChannelOptions = { upstream: config.name, url: config.url, credentials, maxEventBytes: config.maxMessageBytes, ...channelLimits(config), ...(observe ? { observe } : {}) };
  // The channels made, until they are seen gone: swept at each new one, so the set stays as large as the
  // sessions held (a channel not started yet stays; it reads the options when it opens).
  const channels = new Set<SseChannel>();
  const channel = (): SseChannel => {
    for (const c of channels) if (c.gone) channels.delete(c);
    const made = new SseChannel(options, log);
    channels.add(made);
    return made;
  };
  return {
    config: asSessions(config),
    channel,
    retune: (next) => {
      Object.assign(options, channelLimits(next));
      for (const c of channels) {
        if (c.gone) channels.delete(c);
        else c.retime();
      }
      return asSessions(next);
    },
    close: () => credentials.close(),
  };
}

/** The entry as the stdio machinery reads it; `command` only names the server in logs. */
function asSessions(config: HttpUpstreamConfig): StdioUpstreamConfig {
  return {
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
}

/**
 * connectMs bounds the TCP/TLS connection alone; the stream's opening (the GET's headers, then its endpoint
 * event) is its first answer, and waits headersMs. A request's answer comes on the stream, so there are no
 * headers to wait for: requests wait headersMs (the POST's own headers too), and a tool call as long as its
 * answer may take over HTTP, the tool's own limit or callMs, however long that is (a call of minutes answers
 * after its progress, not before).
 */
function channelLimits(config: HttpUpstreamConfig): Pick<SseChannelOptions, 'connectTimeoutMs' | 'openTimeoutMs' | 'requestTimeoutMs' | 'toolTimeout' | 'pingIntervalMs' | 'busySilenceMs'> {
  const perTool = compileToolTimeouts(config.timeouts.tools);
  const callMs = config.timeouts.callMs;
  return {
    connectTimeoutMs: config.timeouts.connectMs,
    openTimeoutMs: config.timeouts.headersMs,
    requestTimeoutMs: config.timeouts.headersMs,
    toolTimeout: (tool) => perTool?.(tool) ?? callMs,
    pingIntervalMs: config.timeouts.pingMs,
    busySilenceMs: config.timeouts.bodyMs,
  };
}
