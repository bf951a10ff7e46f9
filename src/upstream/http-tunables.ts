// What a reload may change on a running Streamable HTTP upstream without a new one: its `timeouts` and its
// `pool`, held here as live values that the pass-through and the message client read at each request, so a
// new value holds from the next request on while the requests in flight keep theirs. The connect, headers and
// body timeouts and the pool's own settings are undici Pool options, so a change to any of them replaces the
// pool for new requests, and the old one drains: it takes nothing new, drops its idle connections at once, and
// closes once the requests still on it have ended (a call by its own limits, a listening stream when its client
// leaves). Draining has a deadline, the longest a call sent on the old pool could still run (its `callMs`, or a
// longer tool limit): past it the old pool is destroyed with what it still carries (a listening stream, an
// upstream that keeps a stream alive with comments and never ends it), which ends with GW_ERR_UPSTREAM_TIMEOUT.
// Until 5 December there was none, and such a stream held the old pool and its sockets until the upstream
// itself closed. Where a request goes (url, transport), how it is authenticated (headers, credentials) and what
// it may carry (era, maxMessageBytes) is not here: a change to it builds a new upstream (lease-key.ts decides
// which is which).

import { Pool } from 'undici';
import type { HttpUpstreamConfig } from '../config/types.js';
import { GatewayError } from '../errors.js';
import { canonicalJson } from '../protocol/canonical-json.js';
import { compileToolTimeouts, type ToolTimeout } from './tool-timeouts.js';

/** How long a closing pool's requests are given at shutdown before its connections are destroyed. */
const SHUTDOWN_WAIT_MS = 1_000;
/** The longest delay a timer takes (about 24.8 days); a longer one would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/** Where an HTTP upstream's requests go and how long they may take, read at each request (not copied). */
export interface HttpRequestLimits {
  /** The calls' connections. */
  readonly calls: Pool;
  /** Listening streams' connections (a GET, a subscriptions/listen), apart from the calls' (http.ts). */
  readonly streams: Pool;
  /** The limits of calls to some tools (`timeouts.tools`), which also bound the wait for their answer's headers. */
  readonly toolTimeout: ToolTimeout | undefined;
  /** Longest silence on a resumed reply stream, across its reconnects (the upstream's `timeouts.bodyMs`). */
  readonly bodyMs: number;
}

/** One pool for everything, with the pool's own timeouts: for a client that is no upstream's (the doctor, tests). */
export function fixedLimits(pool: Pool, bodyMs = 300_000): HttpRequestLimits {
  return { calls: pool, streams: pool, toolTimeout: undefined, bodyMs };
}

export class HttpTunables implements HttpRequestLimits {
  calls: Pool;
  streams: Pool;
  toolTimeout: ToolTimeout | undefined;
  bodyMs: number;
  /** The options each current pool was built with, to tell whether a reload changed them. */
  private callsShape: string;
  private streamsShape: string;
  /** Pools a reload replaced, until the requests still on them have ended or their drain deadline passed. */
  private readonly draining = new Map<Pool, NodeJS.Timeout>();
  private readonly origin: string;
  private readonly name: string;
  /** The longest a call sent now may run (`callMs`, or a longer tool limit): how long a replaced pool drains. */
  private longestCallMs: number;

  constructor(
    config: HttpUpstreamConfig,
    /** `sessions.max` of the gateway config, which a reload keeps: the streams' pool is at least this large. */
    private readonly sessionsMax: number,
  ) {
    this.origin = new URL(config.url).origin;
    this.name = config.name;
    this.longestCallMs = longestCall(config);
    this.callsShape = canonicalJson(callsOptions(config));
    this.streamsShape = canonicalJson(streamsOptions(config, sessionsMax));
    this.calls = new Pool(this.origin, callsOptions(config));
    this.streams = new Pool(this.origin, streamsOptions(config, sessionsMax));
    this.toolTimeout = compileToolTimeouts(config.timeouts.tools);
    this.bodyMs = config.timeouts.bodyMs;
  }

  /**
   * Takes the values of `config`, an entry of the same upstream that differs in `timeouts`, `pool` or
   * `maxSessions` only. A pool whose options changed is replaced for new requests and drains.
   */
  apply(config: HttpUpstreamConfig): void {
    // The requests already sent went up with the limits of before: those bound how long the old pools drain.
    const drainMs = this.longestCallMs;
    this.longestCallMs = longestCall(config);
    this.toolTimeout = compileToolTimeouts(config.timeouts.tools);
    this.bodyMs = config.timeouts.bodyMs;
    const calls = callsOptions(config);
    const callsShape = canonicalJson(calls);
    if (callsShape !== this.callsShape) {
      this.retire(this.calls, drainMs);
      this.calls = new Pool(this.origin, calls);
      this.callsShape = callsShape;
    }
    const streams = streamsOptions(config, this.sessionsMax);
    const streamsShape = canonicalJson(streams);
    if (streamsShape !== this.streamsShape) {
      this.retire(this.streams, drainMs);
      this.streams = new Pool(this.origin, streams);
      this.streamsShape = streamsShape;
    }
  }

  /** Every pool, the draining ones too: what is still open has no client left (the edge has drained). */
  async close(): Promise<void> {
    const all = [this.calls, this.streams, ...this.draining.keys()];
    for (const deadline of this.draining.values()) clearTimeout(deadline);
    this.draining.clear();
    await Promise.all(all.map(closeWithin));
  }

  /** How many replaced pools still have requests on them. */
  get drainingPools(): number {
    return this.draining.size;
  }

  private retire(pool: Pool, drainMs: number): void {
    // Past the deadline no call sent on this pool is still within its limit: what remains is a stream with
    // no end of its own (a listen, a stalled upstream), ended with an error that names the reason.
    const deadline = setTimeout(() => {
      const outlived = new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', `Upstream "${this.name}": the connection a reload replaced was closed after draining for ${drainMs} ms (the longest call limit); reconnect to continue`, this.name);
      void pool.destroy(outlived).catch(() => {});
    }, Math.min(drainMs, MAX_TIMER_MS));
    deadline.unref();
    this.draining.set(pool, deadline);
    const letGo = (): void => {
      clearTimeout(deadline);
      this.draining.delete(pool);
    };
    // undici's graceful close: nothing new is taken, idle connections close now, busy ones after their request.
    void pool.close().then(letGo, letGo);
  }
}

/** The longest limit a call to this upstream may have: `callMs`, or a tool's own when it is longer. */
function longestCall(config: HttpUpstreamConfig): number {
  return Math.max(config.timeouts.callMs, ...Object.values(config.timeouts.tools));
}

function callsOptions(config: HttpUpstreamConfig): Pool.Options {
  return {
    connections: config.pool.connections,
    keepAliveTimeout: config.pool.keepAliveTimeoutMs,
    connect: { timeout: config.timeouts.connectMs },
    headersTimeout: config.timeouts.headersMs,
    bodyTimeout: config.timeouts.bodyMs,
  };
}

/**
 * Listening streams last as long as their client stays, each on a connection of its own: from the calls'
 * pool, `pool.connections` of them would leave no connection for any call to this upstream, whoever made it.
 * They get a pool of their own, as large as the sessions Gatehouse holds (sessions.max): past that a stream
 * waits, never a call.
 */
function streamsOptions(config: HttpUpstreamConfig, sessionsMax: number): Pool.Options {
  return { ...callsOptions(config), connections: Math.max(config.pool.connections, sessionsMax) };
}

async function closeWithin(pool: Pool): Promise<void> {
  const closed = pool.close().then(() => true, () => false);
  const timely = await Promise.race([closed, new Promise<boolean>((r) => setTimeout(() => r(false), SHUTDOWN_WAIT_MS).unref())]);
  if (!timely) await pool.destroy().catch(() => {});
}
