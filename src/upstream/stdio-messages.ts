// A stdio server seen through the same message-level interface as an HTTP upstream, so the era probe and
// both bridges work unchanged in front of it. A legacy `initialize` starts a child process of its own (a
// stdio server is one session by construction) and gets a session id; requests without a session go to one
// shared process, used for stateless modern traffic and for the discover probe
// (2026-07-28/basic/transports/stdio.mdx §Backward Compatibility: probe with server/discover).
//
// The legacy sessions here belong to the bridges, which multiplex many clients onto each one. Two rules
// follow. A stdio server's request to its client carries no link to the call it belongs to, so it is
// delivered only when exactly one call is in flight (or, with none, on the session's GET stream); otherwise
// it is refused, never guessed, since the wrong guess would show one caller's elicitation to another. And a child that dies on its own is
// replaced on the next call, after an exponential backoff (`restart`), with readiness false meanwhile.
//
// Children are not started for nothing (issue 15). The probe's `initialize` goes to the child that answered
// its discover: a legacy server's child is still uninitialized (stdio.mdx §Backward Compatibility: fall
// back to initialize), and a modern-only server refuses it and serves on (a dual-era server's child becomes
// that session's). A session ended after nothing but its `initialize` keeps its child for the next
// `initialize` with the same params, so the era probe's child becomes the first session's. And the
// session-less child stops after `idleTimeoutMs` without a caller's request.

import { randomUUID } from 'node:crypto';
import type { StdioUpstreamConfig } from '../config/types.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { ErrorCode, type JsonRpcId, type JsonRpcMessage, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import { onAbort, signalOf, type Cancellation } from '../pipeline/cancellation.js';
import { UpstreamSessionGone, type UpstreamMessages, type UpstreamReply } from '../pipeline/ports.js';
import { principalKey, type Principal } from '../pipeline/principal.js';
import { canonicalJson } from '../protocol/canonical-json.js';
import { answersAsModern } from './era-probe.js';
import type { ChannelFactory, MessageChannel } from './channel.js';
import { StdioProcess } from './stdio-process.js';
import { compileToolTimeouts } from './tool-timeouts.js';
import type { RequestTimeouts } from './pending-requests.js';

/** A legacy server may never answer server/discover; the probe stops waiting after this. */
const DISCOVER_PROBE_TIMEOUT_MS = 5_000;
/** How long an unused child is kept when no `idleTimeoutMs` is given. */
const DEFAULT_IDLE_MS = 30 * 60_000;

export interface CallEntry {
  id: JsonRpcId;
  /** A listen stays open for notifications only: it never owns a server request. */
  listen: boolean;
  /** Gatehouse's own listen (the catalog's watcher): it does not keep an idle child running. */
  own: boolean;
  progressToken: unknown;
  push(m: JsonRpcMessage): void;
}

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

/** Where a process's messages go: the call they belong to when that can be told, else its listen streams. */
export class Router {
  readonly calls: CallEntry[] = [];
  readonly listeners = new Set<(m: JsonRpcMessage) => void>();

  constructor(
    private readonly refuse: (request: JsonRpcRequest, why: string) => void,
    /** Answers a server request Gatehouse can answer itself, whoever's call it came with. */
    private readonly answer: (request: JsonRpcRequest, result: Record<string, unknown>) => void = () => {},
    /** Answers a server request that came when no call and no GET stream could take it. */
    private readonly unanswerable: (request: JsonRpcRequest) => void = () => {},
  ) {}

  route(msg: JsonRpcMessage): void {
    const m = msg as { id?: JsonRpcId; method?: string; params?: { progressToken?: unknown; _meta?: Record<string, unknown> } };
    // basic/utilities/ping.mdx: the receiver MUST answer promptly. A ping names no call, and needs none: the
    // one child serves every caller here, so Gatehouse answers it (never refuses it, never drops it).
    if (m.method === 'ping' && m.id !== undefined) return this.answer(msg as JsonRpcRequest, {});
    if (m.method === 'notifications/progress') {
      const owner = this.calls.find((c) => c.progressToken !== undefined && c.progressToken === m.params?.progressToken);
      if (owner) return owner.push(msg);
    }
    // 2026-07-28 notifications on a listen stream name it (subscriptions.mdx: io.modelcontextprotocol/subscriptionId).
    const subscription = m.params?._meta?.[SUBSCRIPTION_ID];
    if (subscription !== undefined) {
      const owner = this.calls.find((c) => c.id === subscription);
      if (owner) return owner.push(msg);
    }
    const working = this.calls.filter((c) => !c.listen);
    if (m.id !== undefined && m.method !== undefined) {
      if (working.length === 1) return working[0]!.push(msg);
      if (working.length > 1) return this.refuse(msg as JsonRpcRequest, 'several calls are in flight on this server process and a stdio request does not say which one it belongs to');
      // No call, and no GET stream whose reader answers it (listen-hub.ts): dropped, the child would wait
      // for its response for ever. No client can be asked, so it is answered as a client without the
      // method answers (2025-11-25/client/roots.mdx §Error Handling: -32601).
      if (this.listeners.size === 0) return this.unanswerable(msg as JsonRpcRequest);
    } else if (m.method !== 'notifications/progress' && this.calls.length === 1 && (!this.calls[0]!.listen || isListenNotification(m.method))) {
      // The one open call takes what cannot be placed; a listen only what belongs on a listen stream
      // (subscriptions.mdx: a log message is not a subscription's notification).
      return this.calls[0]!.push(msg);
    } else if (m.method !== 'notifications/progress' && working.length === 1 && !isListenNotification(m.method)) {
      return working[0]!.push(msg);
    }
    for (const l of this.listeners) l(msg);
  }
}

/** A client answered the server's question `id`: the call it held waits on the server again, once none other holds it. */
function answered(managed: Managed, id: JsonRpcId): void {
  const call = managed.asked.get(id);
  if (call === undefined) return;
  managed.asked.delete(id);
  for (const waiting of managed.asked.values()) if (waiting === call) return;
  managed.proc.resume(call);
}

/** Notifications that only ever travel on a listen stream, never with a call. */
function isListenNotification(method: string | undefined): boolean {
  return method === 'notifications/subscriptions/acknowledged' || (method !== undefined && /^notifications\/(tools|prompts|resources)\/(list_changed|updated)$/.test(method));
}

interface Managed {
  proc: MessageChannel;
  router: Router;
  /** The server's questions to a client not answered yet: their id, and the call (its upstream id) they hold. */
  asked: Map<JsonRpcId, JsonRpcId>;
  /** When the child was up (epoch ms); only a child started after the last crash proves recovery. */
  startedAt: number;
  /** Called when the process is gone (its session, if any, is forgotten). */
  gone?: () => void;
  /** GET streams open on the child: they end when it does. */
  exitWatchers?: Set<() => void>;
  /** Asked nothing but server/discover, never answered like a modern server: an uninitialized legacy child. */
  probeOnly: boolean;
  /** Taken from the session-less role for an `initialize`; it goes back there if that is refused. */
  wasShared?: boolean;
  /** Sent nothing but server/discover and initialize. */
  pristine: boolean;
  /** Answered server/discover as a modern server. */
  modern?: boolean;
  /** The initialize it accepted: its params (canonical JSON) and its answer. */
  initialized?: { params: string; response: JsonRpcResponse };
  /** The last request made on a caller's behalf (epoch ms). */
  lastUsed: number;
}

/**
 * A client session held elsewhere (a `perSession` child) lent to Gatehouse's own reads under a session id
 * of its own: its requests go to that child, and it never starts or stops one.
 */
export interface Guest {
  alive(): boolean;
  request(message: JsonRpcRequest, signal?: AbortSignal): Promise<JsonRpcResponse>;
  send(message: JsonRpcMessage): void;
}

export interface StdioMessagesOptions {
  /** An unused child (a kept probe child, or the session-less one) stops after this long. Default 30 min. */
  idleTimeoutMs?: number;
  /** What a "child" is: a process running `config.command` unless another channel is given (an SSE session). */
  channel?: ChannelFactory;
}

export class StdioMessages implements UpstreamMessages {
  readonly upstream: string;
  private readonly sessions = new Map<string, Managed>();
  private shared?: Promise<Managed>;
  /** Children whose session ended after its `initialize` alone, kept for the next one with the same params. */
  private readonly spares = new Map<Managed, NodeJS.Timeout>();
  private readonly guests = new Map<string, Guest>();
  /**
   * Every child started and not yet gone, whatever holds it now: close() waits for each. A session's end
   * stops its child without being waited for by close() otherwise (the bridges give their sessions 1 s to
   * end), and until 4 December a child that ignored SIGTERM outlived the close by its SIGKILL's 3 s.
   */
  private readonly live = new Set<MessageChannel>();
  /**
   * The shared child serves every caller at once, so each request goes to it under an id of Gatehouse's
   * (and its progress token likewise): ids must be unique among a sender's outstanding requests
   * (basic/index.mdx §Requests) and progress tokens across active requests (utilities/progress.mdx), and two
   * callers may both send id 1. Keyed by caller and client id: the upstream ids in flight under it, for
   * notifications/cancelled. Two clients of one caller (one API key) may each have the same id in flight;
   * a cancellation naming it cannot tell which, and is dropped.
   */
  private readonly sharedIds = new Map<string, string[]>();
  private sharedSequence = 0;
  /** Children that died on their own (or could not start) since the last successful call. */
  private crashes = 0;
  private lastCrashAt = 0;
  private everStarted = false;
  private readonly idleMs: number;
  private readonly sweeper: NodeJS.Timeout;
  private readonly channel: ChannelFactory;

  constructor(
    private readonly config: StdioUpstreamConfig,
    private readonly log: Logger,
    observe?: (seconds: number) => void,
    options: StdioMessagesOptions = {},
  ) {
    this.upstream = config.name;
    this.idleMs = options.idleTimeoutMs ?? DEFAULT_IDLE_MS;
    this.channel = options.channel ?? (() => stdioChannel(config, log, observe));
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, Math.max(1_000, this.idleMs / 4))).unref();
  }

  /** True once a child was started (so the command can be spawned). */
  get started(): boolean {
    return this.everStarted;
  }

  async post(message: JsonRpcMessage, headers: Record<string, string>, cancel?: AbortSignal | Cancellation, principal?: Principal): Promise<UpstreamReply> {
    const signal = signalOf(cancel);
    const sessionId = headers['mcp-session-id'];
    const method = 'method' in message ? message.method : undefined;
    let managed: Managed;
    const replyHeaders: Record<string, string> = {};
    if (sessionId !== undefined) {
      const guest = this.guests.get(sessionId);
      if (guest) return this.postToGuest(sessionId, guest, message, signal);
      const found = this.sessions.get(sessionId);
      if (!found) return errorReply(404, -32001, 'Session not found');
      managed = found;
    } else if (method === 'initialize') {
      const params = canonicalJson((message as JsonRpcRequest).params ?? {});
      const spare = this.spare(params);
      managed = spare ?? (await this.idleSharedChild()) ?? (await this.start());
      const id = randomUUID();
      this.sessions.set(id, managed);
      managed.gone = () => this.sessions.delete(id);
      replyHeaders['mcp-session-id'] = id;
      if (spare) {
        // The child answered exactly this initialize already; the new session begins where that one stopped.
        this.log.info('stdio upstream child reused for a new session', { pid: spare.proc.pid });
        const answer = { ...spare.initialized!.response, id: (message as JsonRpcRequest).id };
        return { status: 200, headers: replyHeaders, messages: (async function* () {
          yield answer as JsonRpcMessage;
        })() };
      }
    } else {
      const starting = (this.shared ??= this.start().then((m) => {
        m.gone = () => {
          if (this.shared === starting) this.shared = undefined;
        };
        return m;
      }));
      starting.catch(() => {
        if (this.shared === starting) this.shared = undefined;
      });
      managed = await starting;
    }
    if (method !== 'server/discover' && method !== 'initialize') {
      managed.pristine = false;
      managed.probeOnly = false;
    }
    const own = method === 'subscriptions/listen' && principal === undefined;
    if (!own) managed.lastUsed = Date.now();
    const shared = sessionId === undefined && method !== 'initialize';
    if (!('id' in message) || !('method' in message)) {
      // Notifications and the client's answers to server requests; a cancellation names the call by the id
      // the shared child knows it under.
      if (method === undefined && 'id' in message) answered(managed, message.id as JsonRpcId);
      const forwarded = shared && method === 'notifications/cancelled' ? this.cancellationForShared(message, principal) : message;
      if (forwarded !== undefined) managed.proc.send(forwarded);
      else this.log.debug('a cancellation for the shared child names no single call of its caller; dropped', { upstream: this.upstream });
      return { status: 202, headers: {}, messages: empty() };
    }
    const isProbe = message.method === 'server/discover' && sessionId === undefined;
    const timeout = isProbe ? AbortSignal.timeout(DISCOVER_PROBE_TIMEOUT_MS) : undefined;
    return { status: 200, headers: replyHeaders, messages: this.call(managed, message as JsonRpcRequest, signal, timeout, own, shared ? callerKey(principal) : undefined) };
  }

  /**
   * A request for the shared child under an id (and progress token) of Gatehouse's, with `back` to give
   * what the child sends about it the client's own again; `release` forgets the pair once the call is over.
   */
  private remapForShared(request: JsonRpcRequest, caller: string): { request: JsonRpcRequest; back(m: JsonRpcMessage): JsonRpcMessage; release(): void } {
    const upstreamId = `gh-shared-${++this.sharedSequence}`;
    const key = `${caller}\u0000${JSON.stringify(request.id)}`;
    const inFlight = this.sharedIds.get(key);
    if (inFlight === undefined) this.sharedIds.set(key, [upstreamId]);
    else inFlight.push(upstreamId);
    const meta = request.params?._meta as Record<string, unknown> | undefined;
    const clientToken = meta?.progressToken;
    const upstreamToken = clientToken === undefined ? undefined : `${upstreamId}-progress`;
    const params = upstreamToken === undefined ? request.params : { ...request.params, _meta: { ...meta, progressToken: upstreamToken } };
    return {
      request: { ...request, id: upstreamId, ...(params !== undefined ? { params } : {}) },
      back: (m) => {
        const msg = m as { id?: unknown; method?: string; params?: { progressToken?: unknown; _meta?: Record<string, unknown> } };
        if (msg.method === undefined) {
          if (msg.id !== upstreamId) return m;
          // A listen's closing result names the listen too (subscriptions.mdx §Graceful Closure): by the client's id.
          const result = (m as { result?: { _meta?: Record<string, unknown> } }).result;
          if (result?._meta?.[SUBSCRIPTION_ID] === upstreamId) return { ...m, id: request.id, result: { ...result, _meta: { ...result._meta, [SUBSCRIPTION_ID]: request.id } } } as JsonRpcMessage;
          return { ...m, id: request.id } as JsonRpcMessage;
        }
        if (msg.method === 'notifications/progress' && upstreamToken !== undefined && msg.params?.progressToken === upstreamToken) {
          return { ...m, params: { ...msg.params, progressToken: clientToken } } as JsonRpcMessage;
        }
        if (msg.params?._meta?.[SUBSCRIPTION_ID] === upstreamId) {
          return { ...m, params: { ...msg.params, _meta: { ...msg.params._meta, [SUBSCRIPTION_ID]: request.id } } } as JsonRpcMessage;
        }
        return m;
      },
      release: () => {
        const ids = this.sharedIds.get(key);
        const at = ids?.indexOf(upstreamId) ?? -1;
        if (at === -1) return;
        ids!.splice(at, 1);
        if (ids!.length === 0) this.sharedIds.delete(key);
      },
    };
  }

  /**
   * A client's notifications/cancelled for the shared child, naming the call by the id the child knows;
   * undefined when it names no call of this caller's in flight, or more than one. It is then dropped
   * (utilities/cancellation.mdx: a receiver MAY ignore it): passed as it is, it could name another caller's
   * call by Gatehouse's own id, and a guess could stop the wrong client's call.
   */
  private cancellationForShared(message: JsonRpcMessage, principal: Principal | undefined): JsonRpcMessage | undefined {
    const params = (message as { params?: { requestId?: unknown } }).params;
    const inFlight = params?.requestId === undefined ? undefined : this.sharedIds.get(`${callerKey(principal)}\u0000${JSON.stringify(params.requestId)}`);
    if (inFlight?.length !== 1) return undefined;
    return { ...message, params: { ...params, requestId: inFlight[0] } } as JsonRpcMessage;
  }

  /**
   * Takes the kept child that answered an `initialize` with exactly these params (JSON, canonical or not)
   * and nothing since, for a session held elsewhere; the caller owns the process from now on.
   */
  takeSpare(params: Record<string, unknown> | string): { proc: MessageChannel; response: JsonRpcResponse } | undefined {
    const managed = this.spare(typeof params === 'string' ? params : canonicalJson(params));
    if (!managed) return undefined;
    managed.gone = undefined;
    this.log.info('stdio upstream child reused for a new session', { pid: managed.proc.pid });
    return { proc: managed.proc, response: managed.initialized!.response };
  }

  /** Lends a session held elsewhere to Gatehouse's own reads; returns the session id they use. */
  lend(guest: Guest): string {
    const id = randomUUID();
    this.guests.set(id, guest);
    return id;
  }

  unlend(id: string): void {
    this.guests.delete(id);
  }

  private spare(params: string): Managed | undefined {
    for (const [managed, timer] of this.spares) {
      if (managed.initialized?.params !== params || !managed.proc.alive) continue;
      clearTimeout(timer);
      this.spares.delete(managed);
      return managed;
    }
    return undefined;
  }

  /**
   * The session-less child for a session-less `initialize` (the era probe's), when nothing is in flight on
   * it and it was asked nothing but discover probes, or answered them as a modern server: a legacy server's
   * child is still uninitialized; a modern one refuses the `initialize` and is given back (see initialized).
   */
  private async idleSharedChild(): Promise<Managed | undefined> {
    const shared = this.shared;
    const managed = await shared?.catch(() => undefined);
    if (!managed || this.shared !== shared || managed.router.calls.length > 0 || !managed.proc.alive) return undefined;
    if (!managed.probeOnly && !managed.modern) return undefined;
    this.shared = undefined;
    managed.wasShared = true;
    return managed;
  }

  private postToGuest(id: string, guest: Guest, message: JsonRpcMessage, signal?: AbortSignal): UpstreamReply {
    if (!guest.alive()) {
      this.guests.delete(id);
      return errorReply(404, -32001, 'Session not found');
    }
    if (!('id' in message) || !('method' in message)) {
      guest.send(message);
      return { status: 202, headers: {}, messages: empty() };
    }
    // The child's own client picks its ids; Gatehouse's requests on it take random ones of their own, which
    // that client cannot send on purpose (a counter's it could, and collide with Gatehouse's list).
    const request = message as JsonRpcRequest;
    const ask = guest.request({ ...request, id: `gatehouse-guest-${randomUUID()}` }, signal);
    ask.catch(() => {}); // a failure reaches the reader, if there still is one
    return { status: 200, headers: {}, messages: (async function* () {
      yield { ...(await ask), id: request.id } as JsonRpcMessage;
    })() };
  }

  async openGet(headers: Record<string, string>, signal: AbortSignal): Promise<AsyncGenerator<JsonRpcMessage, void, void> | null> {
    const sessionId = headers['mcp-session-id'];
    const managed = this.sessions.get(sessionId ?? '');
    // A session this process does not hold (its child died, or it never was): gone, as an HTTP server's 404 says.
    if (!managed) {
      // A lent (guest) session has no GET stream of its own here; anything else named is gone.
      if (sessionId !== undefined && !this.guests.has(sessionId)) throw new UpstreamSessionGone(this.upstream);
      return null;
    }
    return queue(signal, (push, _finish, fail) => {
      managed.router.listeners.add(push);
      // The child's end is the session's: the stream ends with it, and the listens on it end too.
      const ended = (): void => fail(new UpstreamSessionGone(this.upstream));
      (managed.exitWatchers ??= new Set()).add(ended);
      return () => {
        managed.router.listeners.delete(push);
        managed.exitWatchers?.delete(ended);
      };
    });
  }

  /** The child's exit is the session's end (as the GET stream's, openGet); a session not held here is gone. */
  watchSession(headers: Record<string, string>, gone: () => void): () => void {
    const sessionId = headers['mcp-session-id'];
    const managed = this.sessions.get(sessionId ?? '');
    if (!managed) {
      // A lent (guest) session ends with its host, which has a watch of its own.
      if (sessionId !== undefined && !this.guests.has(sessionId)) queueMicrotask(gone);
      return () => {};
    }
    (managed.exitWatchers ??= new Set()).add(gone);
    return () => void managed.exitWatchers?.delete(gone);
  }

  async deleteSession(sessionId: string): Promise<void> {
    if (this.guests.delete(sessionId)) return;
    const managed = this.sessions.get(sessionId);
    this.sessions.delete(sessionId);
    if (!managed) return;
    if (managed.pristine && managed.initialized && managed.proc.alive && managed.router.calls.length === 0) return this.keep(managed);
    await managed.proc.stop();
  }

  /** Keeps a child that saw only its `initialize` for the next session with the same params, for `idleTimeoutMs`. */
  private keep(managed: Managed): void {
    const timer = setTimeout(() => {
      if (!this.spares.delete(managed)) return;
      this.log.info('stdio upstream child unused; stopping it', { pid: managed.proc.pid, idleMs: this.idleMs });
      void managed.proc.stop();
    }, this.idleMs).unref();
    this.spares.set(managed, timer);
    managed.gone = () => {
      clearTimeout(timer);
      this.spares.delete(managed);
    };
  }

  /** Stops the session-less child once nothing is in flight on it and no caller asked for `idleTimeoutMs`. */
  private sweep(): void {
    const shared = this.shared;
    if (!shared) return;
    void shared.then((managed) => {
      if (this.shared !== shared || managed.router.calls.some((c) => !c.own) || Date.now() - managed.lastUsed < this.idleMs) return;
      this.shared = undefined;
      this.log.info('stdio upstream child unused; stopping it', { pid: managed.proc.pid, idleMs: this.idleMs });
      void managed.proc.stop();
    }, () => {});
  }

  /** Stops the shared process (after a legacy verdict it has nothing more to serve). */
  async releaseShared(): Promise<void> {
    const shared = this.shared;
    this.shared = undefined;
    await shared?.then((m) => m.proc.stop(), () => {});
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.sessions.values(), ...this.spares.keys()];
    for (const timer of this.spares.values()) clearTimeout(timer);
    this.spares.clear();
    this.sessions.clear();
    this.guests.clear();
    const shared = this.shared;
    this.shared = undefined;
    await Promise.all([...all.map((m) => m.proc.stop()), shared?.then((m) => m.proc.stop(), () => {}), ...[...this.live].map((proc) => proc.stop())]);
  }

  /** False after a child died on its own, until a call succeeds again (for /readyz). */
  get healthy(): boolean {
    return this.crashes === 0;
  }

  private async start(): Promise<Managed> {
    await this.backoff();
    const proc = this.channel();
    const router = new Router(
      (request, why) => {
        this.log.warn('stdio upstream request refused: its call cannot be told', { method: request.method, why });
        proc.send({ jsonrpc: '2.0', id: request.id, error: { code: -32603, message: `Gatehouse refused this request: ${why}` } });
      },
      (request, result) => proc.send({ jsonrpc: '2.0', id: request.id, result }),
      (request) => {
        this.log.warn('stdio upstream request refused: no call is in flight and no stream is open to carry it', { method: request.method });
        proc.send({ jsonrpc: '2.0', id: request.id, error: { code: ErrorCode.MethodNotFound, message: `Method not found: ${request.method} (no call is in flight to carry it to a client)` } });
      },
    );
    const managed: Managed = { proc, router, asked: new Map(), startedAt: 0, probeOnly: true, pristine: true, lastUsed: Date.now() };
    proc.onMessage = (m) => router.route(m);
    this.live.add(proc);
    let exitNoted = false;
    proc.onExit = (reason) => {
      this.live.delete(proc);
      exitNoted = true;
      if (!proc.stoppedOnPurpose) this.noteCrash(reason);
      managed.gone?.();
      for (const watcher of managed.exitWatchers ?? []) watcher();
    };
    try {
      await proc.start();
    } catch (err) {
      this.live.delete(proc);
      // One try, one crash: a child that could not be spawned has usually said so through onExit already
      // (until 4 December it was counted twice, and restart.attempts gave up after half its tries).
      if (!exitNoted) this.noteCrash(String((err as Error)?.message ?? err));
      throw err;
    }
    managed.startedAt = Date.now();
    this.everStarted = true;
    return managed;
  }

  /** Notes what a child's `initialize` answered; a child that refused it serves no session and is stopped. */
  private initialized(managed: Managed, request: JsonRpcRequest, res: JsonRpcResponse): void {
    const wasShared = managed.wasShared;
    managed.wasShared = undefined;
    if (res.error === undefined && res.result !== undefined) {
      managed.initialized = { params: canonicalJson(request.params ?? {}), response: res };
      return;
    }
    for (const [id, m] of this.sessions) if (m === managed) this.sessions.delete(id);
    if (wasShared && this.shared === undefined && managed.proc.alive) {
      // A modern-only server refused it and serves on, session-less as before.
      const back = Promise.resolve(managed);
      this.shared = back;
      managed.gone = () => {
        if (this.shared === back) this.shared = undefined;
      };
      return;
    }
    void managed.proc.stop();
  }

  private noteCrash(reason: string): void {
    this.crashes++;
    this.lastCrashAt = Date.now();
    this.log.warn('stdio upstream child is gone; the next call starts a new one after a backoff', { reason, crashes: this.crashes });
  }

  /**
   * Waits out the backoff after a crash: `restart.firstDelayMs`, doubling per crash in a row. Past
   * `restart.attempts` crashes in a row, calls fail at once until the longest delay has passed, so a
   * broken command is not spawned in a loop.
   */
  private async backoff(): Promise<void> {
    if (this.crashes === 0) return;
    const { attempts, firstDelayMs } = this.config.restart;
    const delay = firstDelayMs * 2 ** Math.min(this.crashes - 1, attempts);
    const wait = this.lastCrashAt + delay - Date.now();
    if (this.crashes > attempts && wait > 0) {
      throw new GatewayError('GW_ERR_UPSTREAM_EXITED', `Upstream "${this.upstream}" could not be restarted after ${attempts} attempts; the next try is in ${Math.ceil(wait / 1000)} s`, this.upstream);
    }
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }

  /** Yields what the process sends while this request is in flight, then its response. */
  /** `caller`: set for the shared child, whose requests go under ids of Gatehouse's (see sharedIds). */
  private call(managed: Managed, request: JsonRpcRequest, signal?: AbortSignal, probeTimeout?: AbortSignal, own = false, caller?: string): AsyncGenerator<JsonRpcMessage, void, void> {
    const abort = signal && probeTimeout ? AbortSignal.any([signal, probeTimeout]) : (signal ?? probeTimeout);
    return queue(abort, (push, finish, fail) => {
      const remap = caller === undefined ? undefined : this.remapForShared(request, caller);
      const sent = remap?.request ?? request;
      const progressToken = (sent.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
      const relay = remap ? (m: JsonRpcMessage): void => push(remap.back(m)) : push;
      const entry: CallEntry = {
        id: sent.id,
        listen: request.method === 'subscriptions/listen',
        own,
        progressToken,
        push: (m) => {
          // A question for the client (elicitation, sampling, roots): the call now waits on that client,
          // whose answer may take as long as the asker allows (sessions.inputTimeoutMs), not on the server.
          const asks = m as { id?: JsonRpcId; method?: string };
          if (asks.id !== undefined && asks.method !== undefined && remap !== undefined) {
            // Session-less traffic is 2026-07-28's, which has no server-to-client requests: "The server MUST
            // NOT write JSON-RPC requests to stdout" (2026-07-28/basic/transports/stdio.mdx §Receiving
            // Messages). Passed on, it would reach a modern client that cannot answer it (streamable-http.mdx
            // §Receiving Messages), and the call would wait on it; the child is told its client has no such method.
            this.log.warn('stdio upstream request refused: a 2026-07-28 server sends no requests', { method: asks.method });
            managed.proc.send({ jsonrpc: '2.0', id: asks.id, error: { code: ErrorCode.MethodNotFound, message: `Method not found: ${asks.method} (a 2026-07-28 client takes no server requests)` } });
            return;
          }
          if (asks.id !== undefined && asks.method !== undefined) {
            managed.asked.set(asks.id, sent.id);
            managed.proc.hold(sent.id);
          }
          relay(m);
        },
      };
      managed.router.calls.push(entry);
      const release = (): void => {
        const i = managed.router.calls.indexOf(entry);
        if (i !== -1) managed.router.calls.splice(i, 1);
        remap?.release();
        for (const [question, call] of managed.asked) if (call === sent.id) managed.asked.delete(question);
      };
      // A listen is answered only when it ends: no request timeout applies to it.
      managed.proc.request(sent, abort, !entry.listen).then(
        (res: JsonRpcResponse) => {
          release();
          // Recovery is a working child started after the last crash, not an older sibling still answering,
          // and one that answered more than its handshake: a child that initializes and dies on every call
          // must not reset the backoff each time.
          if (res.error === undefined && managed.startedAt >= this.lastCrashAt && request.method !== 'initialize' && request.method !== 'server/discover') this.crashes = 0;
          if (request.method === 'server/discover' && answersAsModern(res)) {
            managed.probeOnly = false;
            managed.modern = true;
          }
          if (request.method === 'initialize') this.initialized(managed, request, res);
          push(remap ? remap.back(res) : res);
          finish();
        },
        (err: unknown) => {
          release();
          // A probe that times out is a server without server/discover: end quietly, the probe falls back.
          if (probeTimeout?.aborted) finish();
          else fail(err);
        },
      );
      return release;
    });
  }
}

/** Who a shared child's request is for: the caller, or Gatehouse itself. */
function callerKey(principal: Principal | undefined): string {
  return principal === undefined ? 'gatehouse' : principalKey(principal);
}

function errorReply(status: number, code: number, message: string): UpstreamReply {
  const body = { jsonrpc: '2.0' as const, id: null, error: { code, message } };
  return { status, headers: {}, errorText: JSON.stringify(body), messages: (async function* () {
    yield body as JsonRpcMessage;
  })() };
}

async function* empty(): AsyncGenerator<JsonRpcMessage, void, void> {}

/** A push-to-pull bridge: `start` wires producers, the generator yields until finished, failed or aborted. */
function queue(
  signal: AbortSignal | undefined,
  start: (push: (m: JsonRpcMessage) => void, finish: () => void, fail: (err: unknown) => void) => () => void,
): AsyncGenerator<JsonRpcMessage, void, void> {
  const items: JsonRpcMessage[] = [];
  let done = false;
  let error: unknown;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    wake?.();
    wake = undefined;
  };
  const stop = start(
    (m) => {
      items.push(m);
      notify();
    },
    () => {
      done = true;
      notify();
    },
    (err) => {
      error = err;
      done = true;
      notify();
    },
  );
  const aborted = (): void => {
    done = true;
    notify();
  };
  onAbort(signal, aborted);
  return (async function* () {
    try {
      for (;;) {
        while (items.length > 0) yield items.shift()!;
        if (error !== undefined) throw error;
        if (done) return;
        await new Promise<void>((r) => (wake = r));
      }
    } finally {
      stop();
    }
  })();
}

/** A child process running the upstream's command: the default channel. */
/**
 * A child of `config`, timed by `timeouts`: the upstream's live limits when given (stdio-tunables.ts, read
 * at each request, so a reload's new `timeouts` reach the children already running), else the entry's own.
 */
export function stdioChannel(config: StdioUpstreamConfig, log: Logger, observe?: (seconds: number) => void, timeouts?: RequestTimeouts): MessageChannel {
  const limits: RequestTimeouts = timeouts ?? { requestTimeoutMs: config.timeouts.requestMs, toolTimeout: compileToolTimeouts(config.timeouts.tools) };
  return new StdioProcess(
    {
      upstream: config.name,
      command: config.command,
      env: config.env,
      cwd: config.cwd,
      get requestTimeoutMs() {
        return limits.requestTimeoutMs;
      },
      get toolTimeout() {
        return limits.toolTimeout;
      },
      maxLineBytes: config.maxMessageBytes,
      ...(observe ? { observe } : {}),
    },
    log,
  );
}
