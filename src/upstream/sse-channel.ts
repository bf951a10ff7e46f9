// One session with an MCP server that speaks the HTTP+SSE transport of 2024-11-05 (2025-11-25
// basic/transports.mdx §Backwards Compatibility): a GET opens an event stream whose first event, `endpoint`,
// names the URL to POST messages to; every answer comes back on the stream as a `message` event. Gatehouse
// POSTs to the announced endpoint and only to it: an endpoint on another origin is refused and logged.
// Answers are matched to requests by id. The channel has the shape of a stdio child (start, request, send,
// stop, onMessage, onExit), so the session machinery above treats an SSE session like a process: a dropped
// stream fails the calls in flight, and the next call opens a new session.

import { Pool, type Dispatcher } from 'undici';
import { GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { JsonRpcId, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from '../protocol/jsonrpc.js';
import { isEventStreamType, MAX_EVENT_CHARS, SseEventTooLarge, SseParser } from '../protocol/sse.js';
import { NotDelivered } from './channel.js';
import type { UpstreamCredentials } from './credentials.js';
import { isLateAnswer, PendingRequests } from './pending-requests.js';
import type { ToolTimeout } from './tool-timeouts.js';

export interface SseChannelOptions {
  upstream: string;
  /** The SSE URL (the GET). */
  url: string;
  credentials: UpstreamCredentials;
  /** How long opening the TCP/TLS connection may take (the upstream's connectMs). */
  connectTimeoutMs: number;
  /**
   * How long the stream's opening may take once connected: the GET's headers, then its `endpoint` event
   * (the upstream's headersMs: the stream's first answer, more than a connection).
   */
  openTimeoutMs: number;
  requestTimeoutMs: number;
  /** The limits of calls to some tools, in place of requestTimeoutMs (the upstream's `timeouts.tools`). */
  toolTimeout?: ToolTimeout;
  /** The longest event accepted, in characters (the upstream's maxMessageBytes); a longer one ends the session (a flood, or a server gone wrong). */
  maxEventBytes?: number;
  /**
   * After this long without a message on the stream, the upstream is pinged over it; when the stream then
   * carries nothing for as long again, it is dead (see watch()). 0 or undefined: no pings.
   */
  pingIntervalMs?: number;
  /**
   * How long the stream may stay silent, its ping unanswered, while a request sent before the ping still
   * waits for its answer (the upstream's bodyMs): a server may answer one message at a time, and then the
   * ping's turn comes after the call's. Undefined: as long as those requests' own limits allow.
   */
  busySilenceMs?: number;
  observe?: (seconds: number) => void;
}

export class SseChannel {
  private readonly pool: Pool;
  private readonly origin: string;
  private readonly pending: PendingRequests;
  private readonly stream = new AbortController();
  private endpoint: URL | undefined;
  private started = false;
  private exited = false;
  private stopping = false;
  /** POSTs not yet answered, settled either way (see post()). */
  private readonly untaken = new Set<Promise<void>>();
  /** The last notification's POST, settled either way: later messages go after it. */
  private lastNotification: Promise<void> = Promise.resolve();
  /** When the stream last carried a message (performance.now()). */
  private lastHeard = 0;
  /** When the stream last carried any bytes, a comment included (performance.now()). */
  private lastBytes = 0;
  private watchdog: NodeJS.Timeout | undefined;
  /** The interval the watchdog runs at (0: none), to tell whether a reload changed pingIntervalMs (retime()). */
  private watchEvery = 0;
  /** When the watchdog's unanswered ping went out, and when it last probed a quiet busy stream (watch()). */
  private pingSentAt: number | undefined;
  private probedAt = 0;
  private pings = 0;
  /** Comments (keep-alives) seen on the stream since its endpoint (watch()). */
  private comments = 0;
  /** When the last comment came (performance.now()), and the longest time between two of them. */
  private lastComment = 0;
  private commentGap = 0;
  /** When the server last took (2xx) one of the watchdog's pings at its message endpoint (performance.now()). */
  private pingTaken = 0;
  /** A ping's POST not settled yet: no other is sent meanwhile (a held server would queue them all). */
  private pingPosting = false;
  /** The request whose POST a 404 refused, ending the session (undelivered()). */
  private refusedUntaken: JsonRpcId | undefined;
  /** The pool's closing, once begun (closePool). */
  private poolClosed: Promise<void> | undefined;
  /** Called for every message that is not a response to a pending request. */
  onMessage: (msg: JsonRpcMessage) => void = () => {};
  /** Called once when the session is gone, whatever the reason. */
  onExit: (reason: string) => void = () => {};

  constructor(private readonly opts: SseChannelOptions, private readonly log: Logger) {
    const url = new URL(opts.url);
    this.origin = url.origin;
    this.pool = new Pool(this.origin, { connections: 4, connect: { timeout: opts.connectTimeoutMs } });
    this.pending = new PendingRequests(opts.upstream, opts, opts.observe);
  }

  get alive(): boolean {
    return this.started && !this.exited;
  }

  /** Ended, for good: its stream closed or never opened. */
  get gone(): boolean {
    return this.exited;
  }

  get stoppedOnPurpose(): boolean {
    return this.stopping;
  }

  /** No process: an SSE session has no pid. */
  get pid(): undefined {
    return undefined;
  }

  /** Opens the stream and waits for its `endpoint` event; rejects with a clear error otherwise. */
  async start(): Promise<void> {
    const url = new URL(this.opts.url);
    const auth = await this.opts.credentials.headers();
    const headers = { ...auth, accept: 'text/event-stream' };
    let response: Dispatcher.ResponseData;
    try {
      response = await this.pool.request({ method: 'GET', path: url.pathname + url.search, headers, signal: this.stream.signal, headersTimeout: this.opts.openTimeoutMs, bodyTimeout: 0 });
    } catch (err) {
      this.markExited('the stream could not be opened');
      throw new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', `Upstream "${this.opts.upstream}" could not be reached for its event stream: ${(err as Error).message}`, this.opts.upstream, { cause: err });
    }
    const type = String(response.headers['content-type'] ?? '');
    if (response.statusCode !== 200 || !isEventStreamType(type)) {
      // Not read: a body that never ends (a page streamed by a proxy, the wrong type on a live stream) would
      // hold the start for ever (the stream has no body timeout). Until 5 December it was read to its end.
      response.body.on('error', noop).destroy();
      // A refused token is dropped, so that the next stream (the session's restart) goes with a new one.
      if (response.statusCode === 401) this.opts.credentials.invalidate(auth);
      this.markExited(`the GET answered HTTP ${response.statusCode}`);
      throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.opts.upstream}" answered the SSE GET with HTTP ${response.statusCode} (${type || 'no content type'}), not an event stream`, this.opts.upstream);
    }
    this.started = true;
    const announced = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', `Upstream "${this.opts.upstream}" sent no endpoint event within ${this.opts.openTimeoutMs} ms`, this.opts.upstream)), this.opts.openTimeoutMs);
      void this.read(response.body, (err) => {
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      });
    });
    try {
      await announced;
    } catch (err) {
      this.stream.abort();
      this.markExited((err as Error).message);
      throw err;
    }
    this.watch();
  }

  /**
   * Notices a stream that went silent for good: the server stalled, or the network drops packets without a
   * reset, so the connection looks open and no byte ever comes (the stream has no body timeout: a healthy
   * legacy server may say nothing between calls). Each interval without a message, the upstream is pinged
   * (basic/utilities/ping.mdx: implementations SHOULD ping to detect connection health, and treat a timeout
   * as a connection failure); its answer, or any message, within the next interval shows it alive. Else the
   * stream is closed: the calls on it fail at once, where they would each have waited for their own limit,
   * and the next call opens a new session.
   *
   * A ping sent while an earlier request still waits for its answer is not held against the server at once:
   * nothing makes a server answer out of order, and one that takes its messages one at a time (a message
   * loop that awaits each handler, a synchronous tool that blocks its event loop) answers the ping only after
   * the call. Until 4 December such a server's stream was closed during any call longer than two to three
   * intervals that reported no progress, and the call failed however long its limit allowed. The stream may
   * then stay silent for busySilenceMs (the upstream's bodyMs, the silence a Streamable HTTP answer may keep,
   * where a comment is no silence); once no earlier request waits (answered, or failed at its own limit), the
   * ping's usual wait applies.
   *
   * Sooner than that, a stream is dead when its server proved two things and the stream then carries nothing:
   * that it keeps its stream alive with comments (KEEP_ALIVE_PROOF of them, sse-starlette's `: ping` every
   * 15 s, say), and that it is running, by taking (2xx) a ping at its message endpoint once two of its comment
   * gaps, and at least one interval, had passed since the stream's last byte. A server whose event loop is
   * held (a synchronous tool) takes no POST and writes no comment, so it keeps bodyMs; one that answers one
   * message at a time but runs writes its comments. Until 5 December a stream that died without a FIN under
   * a call (a proxy that stops forwarding it, a NAT mapping dropped) was noticed only after bodyMs. While the
   * stream is so quiet under a call, such a server is pinged again each interval, to learn whether it still runs.
   */
  private watch(): void {
    this.lastHeard = performance.now();
    this.runWatchdog();
  }

  /**
   * Takes pingIntervalMs again, when a reload changed it (sse-upstream.ts retune): the watchdog runs at the
   * new interval from now on, and a ping already out keeps its send time. Until 5 December an open stream
   * kept the interval it opened with for its whole life, so a lower pingMs reached new streams only.
   */
  retime(): void {
    if (!this.alive || (this.opts.pingIntervalMs ?? 0) === this.watchEvery) return;
    clearInterval(this.watchdog);
    this.runWatchdog();
  }

  private runWatchdog(): void {
    const every = this.opts.pingIntervalMs ?? 0;
    this.watchEvery = every;
    if (every <= 0) return;
    this.watchdog = setInterval(() => {
      if (!this.alive) return clearInterval(this.watchdog);
      const now = performance.now();
      const sentAt = this.pingSentAt;
      if (sentAt !== undefined) {
        if (this.lastHeard > sentAt) this.pingSentAt = undefined;
        else if (!this.pending.waitingSince(sentAt, isPingId)) return this.endDead(`no answer to a ping within ${every} ms, timeouts.pingMs`, `a ping had no answer within ${every} ms, timeouts.pingMs`);
        else {
          const busy = this.opts.busySilenceMs;
          // Silence here is bodyMs's: no chunk at all, so a server's keep-alive comments keep a busy stream.
          const quietSince = Math.max(this.lastHeard, this.lastBytes);
          if (busy !== undefined && now - quietSince >= busy) return this.endDead(`nothing on the stream for ${busy} ms with a request in flight, timeouts.bodyMs, and a ping unanswered`, `nothing came on it for ${busy} ms while a request was in flight, timeouts.bodyMs, and a ping had no answer`);
          if (this.comments < KEEP_ALIVE_PROOF) return;
          const due = Math.max(every, 2 * this.commentGap);
          if (this.pingTaken - quietSince >= due) return this.endDead(`its keep-alive comments stopped: nothing on the stream for ${Math.round(now - quietSince)} ms, while its message endpoint took a ping`, `its keep-alive comments stopped while its message endpoint still took a ping, and nothing came on it for ${Math.round(now - quietSince)} ms with a request in flight`);
          if (now - quietSince >= due && now - this.probedAt >= every && !this.pingPosting) {
            this.probedAt = now;
            this.ping();
          }
          return;
        }
      }
      if (now - this.lastHeard < every) return;
      this.pingSentAt = this.probedAt = now;
      this.ping();
    }, every);
    this.watchdog.unref();
  }

  /**
   * The watchdog's ping. Answered or not, the answer itself is not awaited: any message on the stream shows
   * it alive. Its POST being taken shows the server running (watch()).
   */
  private ping(): void {
    const msg: JsonRpcRequest = { jsonrpc: '2.0', id: `${PING_PREFIX}${++this.pings}`, method: 'ping' };
    this.pending.wait(msg, undefined, (m) => this.send(m), false).catch(noop);
    this.pingPosting = true;
    this.post(msg).then(
      () => {
        this.pingPosting = false;
        this.pingTaken = performance.now();
      },
      (err: unknown) => {
        this.pingPosting = false;
        this.pending.fail(msg.id, err as Error);
      },
    );
  }

  private endDead(reason: string, detail: string): void {
    this.stream.abort();
    this.markExited(
      `stopped answering (${reason})`,
      () => new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', `Upstream "${this.opts.upstream}" stopped answering on its event stream (${detail}); the stream was closed, and the next call opens a new one`, this.opts.upstream),
    );
  }

  /** Sends a request and resolves with its answer from the stream; fails on timeout, abort or a dropped stream. */
  request(msg: JsonRpcRequest, signal?: AbortSignal, timed = true): Promise<JsonRpcResponse> {
    if (!this.alive) return Promise.reject(this.goneError('is not connected'));
    if (this.pending.has(msg.id)) return Promise.reject(new Error(`duplicate request id ${String(msg.id)}`));
    const answer = this.pending.wait(msg, signal, (m) => this.send(m), timed);
    this.post(msg).catch((err: unknown) => this.pending.fail(msg.id, err as Error));
    return answer;
  }

  undelivered(id: JsonRpcId): boolean {
    return this.exited && this.refusedUntaken === id;
  }

  hold(id: JsonRpcId): void {
    this.pending.hold(id);
  }

  resume(id: JsonRpcId): void {
    this.pending.resume(id);
  }

  abandon(id: JsonRpcId): void {
    this.pending.abandon(id);
  }

  /** Sends a notification or a response; a failure is logged (nothing waits for it). */
  send(msg: JsonRpcMessage): void {
    if (!this.alive) return;
    this.post(msg).catch((err: unknown) => this.log.warn('a message to the SSE upstream could not be delivered', { err }));
  }

  /** Ends the session: the stream is closed, calls in flight fail. */
  async stop(): Promise<void> {
    clearInterval(this.watchdog);
    if (!this.exited) {
      this.stopping = true;
      this.stream.abort();
      this.markExited('stopped');
    }
    await this.closePool();
  }

  /**
   * Closes the session's pool, once, whichever way the session ended: a session is never opened again, so
   * its pool would only hold idle connections to the upstream (as long as the server's Keep-Alive allows).
   * Until 4 December only stop() closed it, and stop() did nothing once the session had ended on its own.
   * Graceful: a POST still under way finishes (or meets its timeout); one queued after this fails at once.
   */
  private closePool(): Promise<void> {
    return (this.poolClosed ??= this.pool.close().catch(() => {}));
  }

  /**
   * Each message is its own POST, and the pool sends them on several connections at once, so the server
   * takes in whichever it has read whole first. Requests and responses may pass each other (JSON-RPC orders
   * nothing between them), but a notification is about what came before it (a cancellation about its
   * request, `notifications/initialized` about the initialize) and before what comes after it: it is posted
   * once every earlier message was taken (answered), and every later message waits until it was.
   */
  private post(msg: JsonRpcMessage): Promise<void> {
    const notification = !('id' in msg);
    const before = notification && this.untaken.size > 0 ? Promise.all(this.untaken) : this.lastNotification;
    const sent = before.then(() => this.postNow(msg));
    const taken = sent.then(noop, noop);
    this.untaken.add(taken);
    void taken.then(() => this.untaken.delete(taken));
    if (notification) this.lastNotification = taken;
    return sent;
  }

  private async postNow(msg: JsonRpcMessage): Promise<void> {
    const endpoint = this.endpoint!;
    const auth = await this.opts.credentials.headers();
    const headers = { ...auth, 'content-type': 'application/json' };
    const res = await this.pool.request({ method: 'POST', path: endpoint.pathname + endpoint.search, headers, body: JSON.stringify(msg), headersTimeout: this.opts.requestTimeoutMs }).catch((err: unknown) => {
      throw new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', `Upstream "${this.opts.upstream}" could not be reached at its message endpoint: ${(err as Error).message}`, this.opts.upstream, { cause: err });
    });
    // Taken once answered: the answer comes on the stream, and the POST's body says nothing. Its body is
    // read in the background, dropped when the session ends: a body held open (a server or proxy that sends
    // 202 and never ends it) held every message after a notification for the pool's body timeout (5 minutes)
    // until 5 December, and would hold the pool's graceful close as long.
    if (this.stream.signal.aborted) res.body.on('error', noop).destroy();
    else res.body.dump({ limit: DUMP_LIMIT, signal: this.stream.signal }).catch(noop);
    // As on every path to an HTTP upstream: a refused token (revoked early, say) is dropped, and the next
    // message fetches a new one. Until 4 December the channel sent it again until its own expiry.
    if (res.statusCode === 401) this.opts.credentials.invalidate(auth);
    // The server no longer knows the session its endpoint names (it expired, or the server restarted behind
    // a proxy that holds the stream): the SDKs' SSE servers answer 404, as a Streamable HTTP server does for
    // an ended session (2025-11-25 basic/transports.mdx §Session Management 4). Every later message would
    // meet the same 404, so the session ends as a dropped stream does: its calls fail (retryable), and the
    // session machinery opens a new stream and replays the initialize. Until 5 December only this message
    // failed, the stream stayed open, and every call after it failed too.
    if (res.statusCode === 404) {
      // The request itself never reached the server: it may go again on the session opened again (undelivered).
      if ('method' in msg && 'id' in msg) {
        this.refusedUntaken = msg.id;
        this.pending.fail(msg.id, new NotDelivered(`Upstream "${this.opts.upstream}" no longer knows the session (its message endpoint answered HTTP 404); the request did not reach it`, this.opts.upstream));
      }
      this.stream.abort();
      this.markExited(`lost its session: its message endpoint answered HTTP 404, the server no longer knows the session`);
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.opts.upstream}" refused a message with HTTP ${res.statusCode}`, this.opts.upstream);
    }
  }

  /** Reads the stream until it ends: the endpoint first (reported through `announced`), then messages. */
  private async read(body: Dispatcher.ResponseData['body'], announced: (err?: Error) => void): Promise<void> {
    const max = this.opts.maxEventBytes ?? MAX_EVENT_CHARS;
    const parser = new SseParser(max);
    let reason = 'the event stream ended';
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        this.lastBytes = performance.now();
        for (const event of parser.push(chunk)) {
          if (event.data === undefined) {
            if (this.endpoint !== undefined && event.raw.charCodeAt(0) === 0x3a /* : */) this.keptAlive();
            continue;
          }
          if (this.endpoint === undefined) {
            if (event.event !== 'endpoint') continue;
            const target = URL.canParse(event.data.trim(), this.opts.url) ? new URL(event.data.trim(), this.opts.url) : undefined;
            if (target === undefined) {
              announced(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.opts.upstream}" named a message endpoint that is not a URL (${event.data.trim().slice(0, 200)})`, this.opts.upstream));
              return;
            }
            if (target.origin !== this.origin) {
              this.log.warn('an SSE upstream named an endpoint on another origin; refused', { upstream: this.opts.upstream, origin: target.origin });
              announced(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.opts.upstream}" named a message endpoint on another origin (${target.origin}); Gatehouse posts only to the stream's own origin`, this.opts.upstream));
              return;
            }
            this.endpoint = target;
            announced();
            continue;
          }
          if (event.event !== undefined && event.event !== 'message') continue;
          this.onEventData(event.data);
        }
      }
    } catch (err) {
      // The parser ends an event that grows past the bound (the upstream's maxMessageBytes).
      if (!this.stopping) reason = err instanceof SseEventTooLarge ? `it sent an event of more than ${max} characters` : `the event stream broke: ${(err as Error).message}`;
    }
    if (this.endpoint === undefined) announced(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.opts.upstream}" closed its event stream before naming an endpoint`, this.opts.upstream));
    this.stream.abort();
    this.markExited(reason);
  }

  /** A comment came: the server's keep-alives, and the longest wait between two of them (watch()). */
  private keptAlive(): void {
    const now = performance.now();
    if (this.comments > 0) this.commentGap = Math.max(this.commentGap, now - this.lastComment);
    this.lastComment = now;
    this.comments++;
  }

  private onEventData(data: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      this.log.warn('an SSE upstream sent an event that is not JSON; ignored', { upstream: this.opts.upstream, data: data.slice(0, 200) });
      return;
    }
    if (parsed === null || typeof parsed !== 'object') return;
    this.lastHeard = performance.now();
    // A 2025-03-26 batch (basic/transports.mdx §Sending Messages 6): its messages one by one, as a stdio
    // child's (stdio-process.ts). Until 5 December it was taken for one message, and answered no request.
    if (Array.isArray(parsed)) {
      for (const member of parsed) if (member !== null && typeof member === 'object' && !Array.isArray(member)) this.onMessageIn(member as JsonRpcMessage);
      return;
    }
    this.onMessageIn(parsed as JsonRpcMessage);
  }

  private onMessageIn(msg: JsonRpcMessage): void {
    if (this.pending.settle(msg)) return;
    if (isLateAnswer(msg)) return this.log.debug('a late answer from the upstream, for a request no longer waiting; dropped', { id: (msg as { id?: unknown }).id });
    this.onMessage(msg);
  }

  private markExited(reason: string, error?: () => Error): void {
    if (this.exited) return;
    this.exited = true;
    clearInterval(this.watchdog);
    if (this.started && !this.stopping) this.log.warn('SSE upstream session ended', { upstream: this.opts.upstream, reason });
    // A dropped stream fails the calls in flight clearly; the next call opens a new session.
    this.pending.failAll(error ?? (() => new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.opts.upstream}" ended its event stream before answering (${reason})`, this.opts.upstream)));
    void this.closePool();
    this.onExit(reason);
  }

  private goneError(what: string): GatewayError {
    return new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.opts.upstream}" ${what}`, this.opts.upstream);
  }
}

function noop(): void {}

/** The most of a POST's answer body read to keep its connection (undici's default): past it the connection is closed. */
const DUMP_LIMIT = 128 * 1024;

/**
 * Comments that show a server keeps its stream alive with them (watch()): one alone may be a greeting
 * (`: connected`), not a keep-alive; three give two gaps, the longest of which sets how long its silence may last.
 */
const KEEP_ALIVE_PROOF = 3;

/** The ids of the watchdog's own pings, which do not make the server busy (watch()). */
const PING_PREFIX = 'gatehouse-ping-';
const isPingId = (id: JsonRpcId): boolean => typeof id === 'string' && id.startsWith(PING_PREFIX);
