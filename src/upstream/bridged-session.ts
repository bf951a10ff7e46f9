// One legacy client session that Gatehouse holds in front of a modern upstream: what the client declared
// at initialize, its log level, its requests in flight (for notifications/cancelled), the server-to-client
// requests awaiting its answers, and its GET stream.

import { Cancellation, onAbort } from '../pipeline/cancellation.js';
import type { Principal } from '../pipeline/principal.js';
import { CallStream } from '../pipeline/call-stream.js';
import type { Outcome } from '../pipeline/outcome.js';
import { ErrorCode, type JsonRpcId, type JsonRpcMessage, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import type { EndReason, HeldSession } from './session-table.js';


/** The answer to a server-to-client request: the client's, or Gatehouse's own when it stopped waiting. */
export interface ServerRequestAnswer {
  response: JsonRpcResponse;
  /**
   * Set when the client did not answer and Gatehouse gave up on the request (its wait ran out, the call was
   * cancelled or cut, the session ended): why, for the notifications/cancelled it then owes the client.
   */
  abandoned?: string;
}

/**
 * What became of a resources/subscribe the bridge turned into an upstream listen filter: honoured (the
 * listen's acknowledgment names the URI), or the error its client is to be answered with.
 */
export type SubscriptionVerdict = { honoured: true } | { honoured: false; code: number; message: string; data?: unknown; unanswered?: true };

interface Waiting {
  resolve(answer: ServerRequestAnswer): void;
  timer: NodeJS.Timeout;
}

/** Cancellations remembered for requests not here yet (see cancel()); the oldest are forgotten first. */
const EARLY_CANCELS = 64;

export class BridgedSession implements HeldSession {
  lastUsed = Date.now();
  logLevel?: string;
  /** Resource URIs the client subscribed to with resources/subscribe. */
  readonly uris = new Set<string>();
  /** The upstream subscriptions/listen that feeds the GET stream, while one is open. */
  upstreamListen?: AbortController;
  /** How long to wait before opening it again after one that never got going (the bridge doubles it). */
  listenRetryMs?: number;
  /**
   * The URIs the acknowledgment of the session's latest listen named: those its client hears of, told to read
   * again when a listen reopened after a gap names them still.
   */
  heardUris?: ReadonlySet<string>;
  /**
   * Set while the client's GET stream has had no upstream listen feeding it (the last one ended): what changed
   * meanwhile went unheard, and the next acknowledgment is followed by a catch-up (bridge-legacy-client.ts).
   */
  unheard = false;
  /**
   * The short upstream listen that asks whether subscribes made while the client has no GET stream are
   * honoured (bridge-legacy-client.ts confirmWithoutStream), while one is asking.
   */
  confirmation?: AbortController;
  /**
   * Set while a replacement listen the server did not take waits out its pause before it is asked again
   * (bridge-legacy-client.ts listenUpstream): it reads the session's URIs as it goes up, so a change of filter
   * meanwhile joins it instead of opening a listen of its own. Called, it cancels the pause.
   */
  replacing?: () => void;
  /**
   * The refused replacement listens asked again since a listen of the session was last acknowledged (at most
   * REPLACE_TRIES, bridge-legacy-client.ts): kept on the session, not on one listen, so that a subscribe
   * opening a listen beside a retried replacement does not start the tries again.
   */
  replaceTries = 0;
  private readonly inFlight = new Map<JsonRpcId, Cancellation>();
  private readonly waiting = new Map<JsonRpcId, Waiting>();
  /** Ids the client cancelled before their request got here (see cancel()). */
  private readonly cancelledEarly = new Set<JsonRpcId>();
  /** resources/subscribe answers waiting for the acknowledgment of the listen that carries their URI. */
  private readonly pendingSubscribes = new Map<string, { verdict: Promise<SubscriptionVerdict>; settle(v: SubscriptionVerdict): void }>();
  private listen?: CallStream;

  constructor(
    readonly id: string,
    readonly version: string,
    readonly capabilities: Record<string, unknown>,
    readonly clientInfo: unknown,
    /** Who opened the session; background traffic on its behalf (the GET stream's listen) is theirs. */
    readonly principal?: Principal,
  ) {}

  isIdle(): boolean {
    return this.inFlight.size === 0 && this.waiting.size === 0 && this.listen === undefined;
  }

  hasCallInFlight(): boolean {
    return this.inFlight.size > 0 || this.waiting.size > 0;
  }

  /** Whether a client request with this id is in flight on the session. */
  running(clientId: JsonRpcId): boolean {
    return this.inFlight.has(clientId);
  }

  /** Registers a client request in flight; it is cancelled by notifications/cancelled or the session's end. */
  track(clientId: JsonRpcId): { cancel: Cancellation; release(): void } {
    const cancel = new Cancellation();
    this.inFlight.set(clientId, cancel);
    return {
      cancel,
      release: () => {
        if (this.inFlight.get(clientId) === cancel) this.inFlight.delete(clientId);
        this.lastUsed = Date.now();
      },
    };
  }

  /**
   * 2025-11-25/basic/utilities/cancellation.mdx: stop work on the request, send nothing more for it. The
   * request and its cancellation are two POSTs, and the request may still be in Gatehouse's stages (an
   * approval, the store) when the cancellation gets here: such an id is remembered (the last EARLY_CANCELS;
   * ids are never reused in a session, basic/index.mdx §Requests), and its request is not sent when it comes
   * (cancelledBeforeArrival). Until 5 December it was dropped, and the request ran upstream all the same.
   */
  cancel(clientId: JsonRpcId | undefined): void {
    if (clientId === undefined) return;
    const call = this.inFlight.get(clientId);
    if (call !== undefined) return call.cancel();
    if (typeof clientId !== 'string' && typeof clientId !== 'number') return;
    this.cancelledEarly.add(clientId);
    if (this.cancelledEarly.size > EARLY_CANCELS) this.cancelledEarly.delete(this.cancelledEarly.values().next().value!);
  }

  /** Whether the client cancelled this request before it got here (once: the id is forgotten). */
  cancelledBeforeArrival(clientId: JsonRpcId): boolean {
    return this.cancelledEarly.size > 0 && this.cancelledEarly.delete(clientId);
  }

  /** Resolves with the client's answer to a server-to-client request, or an error on timeout or abort. */
  awaitServerRequest(id: JsonRpcId, timeoutMs: number, signal: AbortSignal): Promise<ServerRequestAnswer> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.abandonServerRequest(id, 'the client did not answer in time'), timeoutMs);
      this.waiting.set(id, { resolve, timer });
      onAbort(signal, () => this.abandonServerRequest(id, 'cancelled'));
    });
  }

  /** The client's answer to a server-to-client request (a JSON-RPC response it POSTed). */
  settleServerRequest(response: JsonRpcResponse): void {
    if (response.id !== null) this.settle(response.id, { response });
  }

  /** Gatehouse stops waiting for the client's answer: the request ends with an error of its own. */
  abandonServerRequest(id: JsonRpcId, why: string): void {
    this.settle(id, { response: { jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message: why } }, abandoned: why });
  }

  private settle(id: JsonRpcId, answer: ServerRequestAnswer): void {
    const w = this.waiting.get(id);
    if (!w) return;
    clearTimeout(w.timer);
    this.waiting.delete(id);
    w.resolve(answer);
  }

  /**
   * The verdict on a subscription to `uri`, given by the first upstream listen acknowledgment
   * whose filter asked for it (settleSubscriptions), or after `timeoutMs` without one. Two subscribes of the
   * same URI share it.
   */
  awaitSubscription(uri: string, timeoutMs: number): Promise<SubscriptionVerdict> {
    const pending = this.pendingSubscribes.get(uri);
    if (pending !== undefined) return pending.verdict;
    let settle!: (v: SubscriptionVerdict) => void;
    const verdict = new Promise<SubscriptionVerdict>((resolve) => (settle = resolve));
    const timer = setTimeout(() => this.settleSubscription(uri, { honoured: false, code: ErrorCode.InternalError, message: `The server did not acknowledge the subscription to ${uri} within ${timeoutMs / 1000} s`, data: { uri }, unanswered: true }), timeoutMs);
    timer.unref();
    this.pendingSubscribes.set(uri, {
      verdict,
      settle: (v) => {
        clearTimeout(timer);
        settle(v);
      },
    });
    return verdict;
  }

  /**
   * A listen that asked for `asked` was acknowledged, naming `honoured`: the subscribes waiting on those URIs
   * are answered.
   */
  settleSubscriptions(asked: readonly string[], honoured: readonly string[]): void {
    for (const uri of asked) {
      if (!this.pendingSubscribes.has(uri)) continue;
      this.settleSubscription(uri, honoured.includes(uri) ? { honoured: true } : { honoured: false, code: ErrorCode.InvalidParams, message: `The server did not honour a subscription to ${uri}`, data: { uri } });
    }
  }

  /**
   * Answers with an error those of the subscribes of `asked` still waiting: the upstream refused, or ended
   * unacknowledged, the listen that asked for them, and `message` says which.
   */
  refuseSubscriptions(asked: readonly string[], message: string): void {
    for (const uri of asked) this.settleSubscription(uri, { honoured: false, code: ErrorCode.InternalError, message: `${message} (subscription to ${uri})`, data: { uri } });
  }

  /** Whether a subscribe of `uri` waits for a listen's acknowledgment. */
  subscribing(uri: string): boolean {
    return this.pendingSubscribes.has(uri);
  }

  /** The URIs whose subscribes wait for a listen's acknowledgment. */
  awaitedUris(): string[] {
    return [...this.pendingSubscribes.keys()];
  }

  private settleSubscription(uri: string, verdict: SubscriptionVerdict): void {
    const pending = this.pendingSubscribes.get(uri);
    if (pending === undefined) return;
    this.pendingSubscribes.delete(uri);
    pending.settle(verdict);
  }

  get listening(): boolean {
    return this.listen !== undefined;
  }

  /** Sends a notification on the GET stream, if the client has one open. */
  notify(message: JsonRpcMessage): void {
    this.listen?.push(message);
  }

  /** The session's GET stream (2025-11-25/basic/transports.mdx §Listening for Messages); a new one replaces the old. */
  openListenStream(): Outcome {
    this.closeListenStream();
    // A new stream has heard nothing yet, and owes its client no catch-up for what an earlier one missed.
    this.heardUris = undefined;
    this.unheard = false;
    const stream = new CallStream({ requestId: null, mode: 'listen', acceptsSse: true });
    stream.onClose(() => {
      if (this.listen === stream) this.closeListenStream();
    });
    this.listen = stream;
    return { kind: 'stream', stream, headers: { 'mcp-session-id': this.id } };
  }


  async close(_reason: EndReason): Promise<void> {
    this.confirmation?.abort();
    for (const c of this.inFlight.values()) c.cancel();
    for (const id of [...this.waiting.keys()]) this.abandonServerRequest(id, 'session ended');
    for (const uri of [...this.pendingSubscribes.keys()]) this.settleSubscription(uri, { honoured: false, code: ErrorCode.InternalError, message: 'session ended', data: { uri } });
    this.closeListenStream();
  }

  private closeListenStream(): void {
    this.upstreamListen?.abort();
    this.upstreamListen = undefined;
    const listen = this.listen;
    this.listen = undefined;
    listen?.end();
  }
}
