// One legacy client session backed by one stdio child: forwards the client's POSTs, and routes what the
// child sends on its own (progress, logging, elicitation and sampling requests, list changes) to the
// stream that should carry it.

import { randomUUID } from 'node:crypto';
import { asGatewayError, duplicateId, failure, GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { CallStream } from '../pipeline/call-stream.js';
import type { CallContext } from '../pipeline/context.js';
import { ACCEPTED, refused, type Outcome } from '../pipeline/outcome.js';
import { ErrorCode, errorResponse, type JsonRpcId, type JsonRpcMessage, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import { declaresInput, INPUT_REQUEST_CAPABILITY } from './bridge-modern-client.js';
import { upstreamMessage } from '../protocol/trace-context.js';
import { NotDelivered, type MessageChannel } from './channel.js';
import { RequestAbandoned } from './pending-requests.js';
import type { EndReason, HeldSession } from './session-table.js';

interface InFlight {
  id: JsonRpcId;
  progressToken?: string | number;
  channel: CallStream;
  /** Its client sent notifications/cancelled for it (see cancelled()). */
  cancelled?: boolean;
  /** Sent again once already, its first try refused before the server took it (NotDelivered). */
  resent?: boolean;
}

/** Messages kept for a GET stream that is not open yet; the oldest go first when it overflows. */
const BACKLOG_LIMIT = 256;

export interface Respawner {
  /** Tries after a crash, the first after `firstDelayMs`, each delay doubling; then the session ends. */
  policy: { attempts: number; firstDelayMs: number };
  /** Starts and initializes a replacement child. */
  respawn(): Promise<MessageChannel>;
  /** Told whether a restart worked (readiness follows it). */
  onRestart(ok: boolean): void;
  /** Called when every attempt failed: the session is over. */
  onGiveUp(): void;
}

/** Cancellations remembered for requests not here yet (see cancelled()); the oldest are forgotten first. */
const EARLY_CANCELS = 64;

/** A child up this long after a restart has recovered: its next crash starts the backoff afresh. */
const STABLE_MS = 30_000;

export class StdioSession implements HeldSession {
  lastUsed = Date.now();
  private readonly inFlight: InFlight[] = [];
  private listen?: CallStream;
  private readonly backlog: JsonRpcMessage[] = [];
  /** Set while a crashed child is being replaced; requests wait for it. */
  private restarting?: Promise<boolean>;
  private closed = false;
  /**
   * Crashes since the child last stayed up STABLE_MS: a replacement that answers the replayed initialize
   * and dies soon after is no recovery, so the backoff goes on growing and `restart.attempts` still ends it.
   */
  private crashStreak = 0;
  /**
   * The child's questions to the client (elicitation, sampling, roots) by their id, with the call that waits
   * on each: that call's clock stops until the client answers (a person may take longer than requestMs).
   */
  private readonly asked = new Map<JsonRpcId, { call: JsonRpcId; timer: NodeJS.Timeout }>();
  private adoptedAt = Date.now();
  /** Ids the client cancelled before their request got here (see cancelled()). */
  private readonly cancelledEarly = new Set<JsonRpcId>();
  /**
   * What the client set on its session and a replacement child would not have (see replayState): the params
   * of its last accepted `logging/setLevel`, and its subscriptions held, by URI.
   */
  private logLevel: Record<string, unknown> | undefined;
  private readonly subscriptions = new Map<string, Record<string, unknown>>();

  constructor(
    readonly id: string,
    private proc: MessageChannel,
    private readonly respawner: Respawner,
    private readonly log: Logger,
    /** The longest a call's clock stays stopped for its client's answer (sessions.inputTimeoutMs); then it runs again. */
    private readonly inputTimeoutMs = 300_000,
    /** The capabilities the client declared at initialize: what the child may ask it for. */
    private readonly declared: Record<string, unknown> = {},
  ) {
    this.adopt(proc);
  }

  private adopt(proc: MessageChannel): void {
    this.adoptedAt = Date.now();
    this.proc = proc;
    proc.onMessage = (msg) => this.route(msg);
    proc.onExit = (reason) => this.crashed(reason);
  }

  /**
   * The child died on its own: the calls it had fail at once with a clear error, and a replacement is
   * started with exponential backoff (2026-07-28/basic/transports/stdio.mdx §Unexpected Termination).
   */
  private crashed(reason: string): void {
    if (this.closed) return;
    const err = new GatewayError('GW_ERR_UPSTREAM_EXITED', `Upstream process ${reason}; it is being restarted`);
    // A request the server never took waits for the replacement and goes again on it (handlePost).
    const dead = this.proc;
    for (const f of this.inFlight.splice(0)) {
      if (dead.undelivered?.(f.id) === true && f.resent !== true) this.inFlight.push(f);
      else f.channel.fail(err);
    }
    this.respawner.onRestart(false);
    if (Date.now() - this.adoptedAt >= STABLE_MS) this.crashStreak = 0;
    this.restarting = (async () => {
      const { attempts, firstDelayMs } = this.respawner.policy;
      for (let attempt = this.crashStreak; attempt < attempts && !this.closed; attempt++) {
        this.crashStreak = attempt + 1;
        await new Promise((r) => setTimeout(r, firstDelayMs * 2 ** attempt).unref());
        if (this.closed) return false;
        try {
          const next = await this.respawner.respawn();
          // Replayed before it is adopted: a child that dies meanwhile is a failed try, not a second crash
          // of the session while this one is handled.
          if (!this.closed) await this.replayState(next);
          // Closed while it started (the gateway shut down, a reload retired the upstream): not adopted, stopped.
          if (this.closed) {
            void next.stop();
            return false;
          }
          if (!next.alive) throw new GatewayError('GW_ERR_UPSTREAM_EXITED', 'The restarted upstream process exited while its session state was replayed');
          this.adopt(next);
          this.respawner.onRestart(true);
          return true;
        } catch (e) {
          this.log.warn('restart of the stdio upstream failed', { attempt: attempt + 1, err: e });
        }
      }
      this.log.error('stdio upstream did not come back; the session ends');
      this.closed = true;
      this.respawner.onGiveUp();
      this.closeListenStream();
      return false;
    })().finally(() => (this.restarting = undefined));
  }

  /** Notes what an accepted request set on the session (a logging level, a subscription), for replayState. */
  private remember(request: JsonRpcRequest): void {
    const params = request.params ?? {};
    if (request.method === 'logging/setLevel') this.logLevel = params;
    const uri = params.uri;
    if (typeof uri !== 'string') return;
    if (request.method === 'resources/subscribe') this.subscriptions.set(uri, params);
    else if (request.method === 'resources/unsubscribe') this.subscriptions.delete(uri);
  }

  /**
   * A replacement child knows the client's initialize (replayed by the respawner) and nothing it set since.
   * The client is not told of the restart and goes on believing its logging level (2025-11-25/server/
   * utilities/logging.mdx §Setting Log Level) and subscriptions (server/resources.mdx §Subscriptions) hold:
   * until 4 December the new child logged at its default level and sent no updates, silently. They are
   * replayed, under ids of Gatehouse's, before the session serves again; a refusal or failure is logged.
   */
  private async replayState(proc: MessageChannel): Promise<void> {
    const requests: Array<{ method: string; params: Record<string, unknown> }> = [
      ...(this.logLevel === undefined ? [] : [{ method: 'logging/setLevel', params: this.logLevel }]),
      ...[...this.subscriptions.values()].map((params) => ({ method: 'resources/subscribe', params })),
    ];
    for (const { method, params } of requests) {
      try {
        const answer = await proc.request({ jsonrpc: '2.0', id: `gatehouse-replay-${randomUUID()}`, method, params });
        if (answer.error !== undefined) this.log.warn('the restarted stdio child refused session state replayed to it', { method, error: answer.error.message });
      } catch (err) {
        this.log.warn('session state could not be replayed to the restarted stdio child', { method, err });
      }
    }
  }

  /**
   * Has the child drop its client's subscription to `uri`, one a reload's rules no longer allow
   * (catalog/pass-through-subscriptions.ts), under an id of Gatehouse's; and forgets it first, so that a
   * replacement child is not subscribed to it again (replayState). False when the child did not drop it
   * (down for good, refused, no answer).
   * The client, which believes it still holds, is told as the bridges tell theirs (LegacyClientBridge.
   * rejudgeSubscriptions), the one way a 2025-11-25 server can: a last `notifications/resources/updated` on
   * its GET stream, when one is open, whose read is now refused as anyone's would be. A message of Gatehouse's
   * own between the child's, which this session writes one by one (the HTTP pass-through relays bytes, and
   * has no such place).
   */
  async unsubscribe(uri: string): Promise<boolean> {
    this.subscriptions.delete(uri);
    if (!(await this.alive()) || this.closed) return false;
    let dropped: boolean;
    try {
      const answer = await this.proc.request({ jsonrpc: '2.0', id: `gatehouse-unsubscribe-${randomUUID()}`, method: 'resources/unsubscribe', params: { uri } });
      dropped = answer.error === undefined;
    } catch (err) {
      this.log.warn('the stdio child could not be asked to drop a subscription its session holds', { err });
      dropped = false;
    }
    this.listen?.push({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });
    return dropped;
  }

  /** Waits out a restart in progress; false when the child did not come back. */
  private async alive(): Promise<boolean> {
    return this.restarting ? this.restarting : this.proc.alive;
  }

  touch(): void {
    this.lastUsed = Date.now();
  }

  /** True once the session is over (closed, or its child never came back). */
  get ended(): boolean {
    return this.closed;
  }

  /**
   * Gatehouse's own request on this session's child (a list, for the catalog), answered to Gatehouse, not
   * to the client. It fails at once while the child is being replaced: the client's own calls wait for
   * that, and must not wait behind Gatehouse's.
   */
  async request(message: JsonRpcRequest, signal?: AbortSignal): Promise<JsonRpcResponse> {
    if (this.closed || this.restarting !== undefined || !this.proc.alive) throw new GatewayError('GW_ERR_UPSTREAM_EXITED', 'The upstream process is down or being restarted');
    return this.proc.request(message, signal);
  }

  /** Writes a message of Gatehouse's own (a cancellation of its request) to the child. */
  send(message: JsonRpcMessage): void {
    this.proc.send(message);
  }

  isIdle(): boolean {
    return this.inFlight.length === 0 && this.listen === undefined;
  }

  hasCallInFlight(): boolean {
    return this.inFlight.length > 0;
  }

  async handlePost(ctx: CallContext): Promise<Outcome> {
    if (!(await this.alive())) return refused(failure(new GatewayError('GW_ERR_UPSTREAM_EXITED', 'The upstream process is down and could not be restarted')));
    if (ctx.kind !== 'request') {
      // Notifications and the client's answers to server requests: hand over, then 202 with no body. An
      // answer starts the clock of the call that waited on it again.
      const answered = ctx.kind === 'response' ? (ctx.message as { id?: JsonRpcId }).id : undefined;
      const waiting = answered !== undefined ? this.asked.get(answered) : undefined;
      this.proc.send(ctx.message!);
      if (waiting !== undefined) this.answered(answered!, waiting);
      if (ctx.method === 'notifications/cancelled') this.cancelled(ctx.message as { params?: { requestId?: unknown } });
      return ACCEPTED;
    }
    const request = upstreamMessage(ctx) as JsonRpcRequest;
    // The child's answers are matched to requests by id alone, so a second request with the id of one
    // still running could not be told apart from it. The client broke the rule (2025-11-25/basic/index.mdx
    // §Requests: an id is not used twice in a session), so it is told so, not blamed on the upstream.
    if (this.inFlight.some((e) => e.id === request.id)) return refused(duplicateId(request.id));
    const channel = new CallStream({ requestId: request.id, mode: 'call', acceptsSse: ctx.acceptsSse });
    if (this.cancelledEarly.delete(request.id)) {
      // Its cancellation overtook it (see cancelled()): it is not sent, and ends as a cancelled call does,
      // once its stream is handed on (the edge drops the outcome of a call cancelled before it came back).
      setImmediate(() => {
        ctx.cancel.cancel();
        channel.end();
      });
      return { kind: 'stream', stream: channel };
    }
    const entry: InFlight = { id: request.id, progressToken: progressTokenOf(request), channel };
    this.inFlight.push(entry);
    void (async () => {
      try {
        // Legacy clients' disconnects are not cancellations (2025-11-25/basic/transports.mdx §Sending
        // Messages 6), so no abort signal: the answer is dropped if nobody waits for it any more.
        let answer: JsonRpcResponse;
        try {
          answer = await this.proc.request(request);
        } catch (err) {
          answer = await this.resend(entry, request, err);
        }
        if (answer.error === undefined) this.remember(request);
        channel.finish(answer);
      } catch (err) {
        if (entry.cancelled === true && err instanceof RequestAbandoned) {
          // Cancelled by its client: no response is sent for it (2025-11-25 utilities/cancellation.mdx
          // §Behavior Requirements), but the HTTP exchange ends, with nothing in it, and the call is the
          // client's to drop (audited aborted, client_closed), as on the legacy-client bridge.
          ctx.cancel.cancel();
          channel.end();
          return;
        }
        channel.fail(asGatewayError(err, 'GW_ERR_UPSTREAM_BAD_RESPONSE', this.log, { callId: ctx.callId }));
      } finally {
        const at = this.inFlight.indexOf(entry);
        if (at !== -1) this.inFlight.splice(at, 1);
        for (const [question, waiting] of this.asked) {
          if (waiting.call !== request.id) continue;
          clearTimeout(waiting.timer);
          this.asked.delete(question);
        }
        this.touch();
      }
    })();
    return { kind: 'stream', stream: channel };
  }

  /**
   * A request the server never took because its session was gone (an HTTP+SSE server that answered 404,
   * MessageChannel.undelivered) goes again, once, on the session opened again, as the legacy-client bridge
   * sends one again on a 404 (bridge-modern-client.ts); crashed() kept it in flight for this. Any other
   * failure, or a second refusal, is the call's.
   */
  private async resend(entry: InFlight, request: JsonRpcRequest, err: unknown): Promise<JsonRpcResponse> {
    if (!(err instanceof NotDelivered) || entry.resent === true || !this.inFlight.includes(entry)) throw err;
    entry.resent = true;
    if (!(await this.alive()) || this.closed) throw err;
    return this.proc.request(request);
  }

  /** The session's GET stream; what the child sent while none was open comes first. */
  openListenStream(): Outcome {
    this.closeListenStream();
    const stream = new CallStream({ requestId: null, mode: 'listen', acceptsSse: true });
    stream.onClose(() => {
      if (this.listen === stream) this.closeListenStream();
    });
    this.listen = stream;
    for (const msg of this.backlog.splice(0)) stream.push(msg);
    return { kind: 'stream', stream, headers: { 'mcp-session-id': this.id } };
  }


  failAll(err: GatewayError): void {
    for (const f of this.inFlight.splice(0)) f.channel.fail(err);
    this.closeListenStream();
  }

  async close(reason: EndReason): Promise<void> {
    this.closed = true;
    this.proc.onExit = () => {};
    this.failAll(new GatewayError('GW_ERR_UPSTREAM_EXITED', `Session ended (${reason})`));
    await this.proc.stop();
  }

  /**
   * Progress goes to the request whose token it carries; anything else to the newest request still open,
   * else the GET stream, else kept for it; a ping nothing can carry is answered here.
   */
  private route(msg: JsonRpcMessage): void {
    if (this.refusedForClient(msg)) return;
    if ('method' in msg && msg.method === 'notifications/progress') {
      const token = (msg.params as { progressToken?: string | number } | undefined)?.progressToken;
      const owner = this.inFlight.find((f) => f.progressToken === token);
      if (owner && owner.channel.push(msg)) return;
    }
    for (let i = this.inFlight.length - 1; i >= 0; i--) {
      const call = this.inFlight[i]!;
      if (call.channel.push(msg)) {
        // A question for the client: the call now waits on the client, not on the child.
        const question = msg as { id?: JsonRpcId; method?: string };
        if (question.id !== undefined && question.method !== undefined) {
          const asked = question.id;
          // Not for ever: a client that never answers gives the call its clock back after inputTimeoutMs.
          const timer = setTimeout(() => {
            const waiting = this.asked.get(asked);
            if (waiting !== undefined) this.answered(asked, waiting);
          }, this.inputTimeoutMs).unref();
          this.asked.set(asked, { call: call.id, timer });
          this.proc.hold(call.id);
        }
        return;
      }
    }
    if (this.listen?.push(msg)) return;
    if ('method' in msg && msg.method === 'ping' && 'id' in msg && msg.id !== undefined) {
      // No stream of the client's is open to carry it, and kept for one the client may never open it would
      // be answered late or never; the receiver MUST respond promptly (basic/utilities/ping.mdx).
      this.proc.send({ jsonrpc: '2.0', id: msg.id, result: {} });
      return;
    }
    if (this.backlog.length >= BACKLOG_LIMIT) this.backlog.shift();
    this.backlog.push(msg);
  }

  /**
   * A question for the client that it did not declare it can answer (2025-11-25/client/elicitation.mdx
   * §Capabilities, sampling.mdx, roots.mdx: clients that support it MUST declare it, so a server may ask only
   * for what was declared) is answered here, as the bridges of `shared` and `single` answer it: an
   * elicitation is cancelled, anything else is -32601. Until 4 December it went to the client, and the call
   * waited, its clock stopped, on an answer a client without the capability need not give.
   */
  private refusedForClient(msg: JsonRpcMessage): boolean {
    if (!('method' in msg) || !('id' in msg) || msg.id === undefined || !(msg.method in INPUT_REQUEST_CAPABILITY)) return false;
    if (declaresInput(this.declared, msg.method, msg.params)) return false;
    this.log.warn('stdio upstream asked its client for what the client did not declare; answered by Gatehouse', { method: msg.method });
    this.proc.send(msg.method === 'elicitation/create' ? { jsonrpc: '2.0', id: msg.id, result: { action: 'cancel' } } : errorResponse(msg.id, ErrorCode.MethodNotFound, `The client did not declare support for ${msg.method}`));
    return true;
  }

  /**
   * The client cancelled one of its calls (its notifications/cancelled went on to the server). A server need
   * not answer a cancelled request, and the v1 SDK's never does (cancellation.mdx §Behavior Requirements), so
   * waiting for the answer would keep the call in flight until its time limit (timeouts.requestMs, or callMs
   * over HTTP+SSE): its POST open, its session busy, never ended to make room at the cap (hasCallInFlight).
   * The wait ends now; an answer that still comes is dropped by the channel as a late one.
   * The client's request and its cancellation are two POSTs, and the request may still be in Gatehouse's
   * stages (the catalog listing a name it met first, the store) when the cancellation gets here: then the
   * server, told of a request it never got, would run it when it came. Such an id is remembered (the last
   * EARLY_CANCELS of them; ids are never reused in a session, basic/index.mdx §Requests), and the request
   * that comes with it is not sent.
   */
  private cancelled(message: { params?: { requestId?: unknown } }): void {
    const target = message.params?.requestId;
    const call = this.inFlight.find((f) => f.id === target);
    if (call === undefined) {
      if (typeof target !== 'string' && typeof target !== 'number') return;
      this.cancelledEarly.add(target);
      if (this.cancelledEarly.size > EARLY_CANCELS) this.cancelledEarly.delete(this.cancelledEarly.values().next().value!);
      return;
    }
    call.cancelled = true;
    this.proc.abandon(call.id);
  }

  /** The client answered a question of the child's (or gave up on it): the call's clock runs again. */
  private answered(question: JsonRpcId, waiting: { call: JsonRpcId; timer: NodeJS.Timeout }): void {
    clearTimeout(waiting.timer);
    this.asked.delete(question);
    this.proc.resume(waiting.call);
  }

  private closeListenStream(): void {
    const listen = this.listen;
    this.listen = undefined;
    listen?.end();
  }
}

function progressTokenOf(req: JsonRpcRequest): string | number | undefined {
  const meta = (req.params as { _meta?: { progressToken?: string | number } } | undefined)?._meta;
  return meta?.progressToken;
}
