// The deprecated HTTP+SSE transport of 2024-11-05, for clients that speak nothing newer (listen.ssePath).
// Each connection is served as a legacy client of Gatehouse's own pipeline: a POSTed message goes through
// the same front door, auth and stages as on the MCP endpoint, with a legacy session Gatehouse holds for
// the connection, and whatever the pipeline answers is written onto the connection's stream. Server
// messages outside any call come from an internal listen stream on that session; a dropped stream ends
// the session as a DELETE would. Spec: 2025-11-25/basic/transports.mdx §Backwards Compatibility, and
// 2024-11-05/basic/transports.mdx §HTTP with SSE.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { toWire } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { CallContext } from '../pipeline/context.js';
import { principalKey } from '../pipeline/principal.js';
import { admitPost, admitStreamRequest } from '../protocol/front-door.js';
import { ErrorCode, type JsonRpcId } from '../protocol/jsonrpc.js';
import type { Outcome } from '../pipeline/outcome.js';
import { CALL_ID_HEADER, discardOutcome, writeOutcome } from './answer.js';
import type { EdgeCore, Received } from './edge-core.js';
import { deliverOutcome, type Delivered } from './sse-outcome.js';
import { recordWrittenFailure, recordWrittenRefusal } from './answer-summary.js';
import { SseSession } from './sse-session.js';
import { atCredentialExpiry } from './credential-expiry.js';
import { Cancellation, NEVER_CANCELLED } from '../pipeline/cancellation.js';
import { proxyPathPrefix } from '../net/path-prefix.js';
import { closedStatus } from '../pipeline/events.js';
import { clientAborted } from './stream-end.js';

export interface SseEndpointOptions {
  ssePath: string;
  /** listen.path and listen.publicUrl: a path prefix a proxy adds in front of Gatehouse is kept in the endpoint URL. */
  mcpPath: string;
  publicUrl?: string;
  /** `sessions` of the config: most connections at once, most of one caller's, and how long one may go without a message. */
  max: number;
  maxSsePerCaller: number;
  idleTimeoutMs: number;
}

export interface SseEndpoint {
  readonly ssePath: string;
  /** Where the `endpoint` event tells clients to POST: `ssePath/messages`. */
  readonly postPath: string;
  open(req: IncomingMessage, res: ServerResponse): Promise<void>;
  post(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Open connections. */
  readonly size: number;
  /** Ends each connection once nothing it asked is still being answered. */
  drain(): void;
  close(): void;
}

/** How long the DELETE that ends a dropped connection's session may take. */
const END_TIMEOUT_MS = 10_000;
/** The listen stream is opened again this long after it ended, doubling while it keeps ending sooner than the most. */
const RELISTEN_MIN_MS = 1_000;
const RELISTEN_MAX_MS = 30_000;

export function createSseEndpoint(core: EdgeCore, opts: SseEndpointOptions, log: Logger): SseEndpoint {
  const ssePath = opts.ssePath;
  const postPath = `${ssePath.replace(/\/+$/, '')}/messages`;
  const prefix = proxyPathPrefix(opts.mcpPath, opts.publicUrl);
  const live = new Map<string, SseSession>();
  let draining = false;
  const sweeper = setInterval(sweep, Math.min(60_000, Math.max(1_000, opts.idleTimeoutMs / 4))).unref();

  /** Ends connections with nothing in flight and no message for the idle timeout. */
  function sweep(now = Date.now()): void {
    for (const s of live.values()) if (s.inFlight === 0 && s.lastUsed < now - opts.idleTimeoutMs) s.end();
  }

  /** The GET that opens a connection: the front door and auth, then the stream and its `endpoint` event. */
  async function open(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const call = core.startCall('GET', false);
    const { record } = call;
    // The connection's stream lasts until its client closes it: once served, that close is its normal end.
    res.once('close', () => call.done(closedStatus(res), clientAborted(res, true)));
    const caller = await core.admitCaller(req, res, record, ['GET'], 'the SSE endpoint', 'sse');
    if (caller === undefined || !caller.authed.ok) return;
    // The client left while it was being admitted (a token's keys being fetched): the response's `close` has
    // passed, so a session made now would never learn it, and would hold its slot until the idle timeout.
    if (res.destroyed) return void log.debug('an SSE client left before its stream opened', { subject: caller.authed.principal.subject });
    const principal = caller.authed.principal;
    record.subject = principal.subject;
    const admitted = admitStreamRequest(req.headers, 'GET');
    if (!admitted.ok) return core.refuse(res, record, 'admission', null, admitted.refusal);
    record.era = 'legacy';
    const owner = principalKey(principal);
    // One caller's connections are bounded below the whole table's, so one caller cannot fill it and
    // lock everyone else out; past either bound only the caller's own idle connections make room.
    const perCaller = Math.min(opts.maxSsePerCaller, opts.max);
    if (countOf(owner) >= perCaller && !evictIdle(owner)) {
      res.setHeader('connection', 'close');
      return core.refuse(res, record, 'admission', null, { kind: 'transport', code: 'session_cap', status: 503, rpcCode: ErrorCode.InvalidRequest, message: `This caller holds ${perCaller} SSE sessions (sessions.maxSsePerCaller), all busy; close one or retry later`, headers: { 'retry-after': '5' } });
    }
    if (live.size >= opts.max && !evictIdle(owner)) {
      res.setHeader('connection', 'close');
      return core.refuse(res, record, 'admission', null, { kind: 'transport', code: 'session_cap', status: 503, rpcCode: ErrorCode.InvalidRequest, message: `Gatehouse holds ${opts.max} SSE sessions, all busy; retry later`, headers: { 'retry-after': '5' } });
    }
    const session = new SseSession(owner, principal, caller.clientAddress, req.headers, res);
    live.set(session.id, session);
    session.signal.addEventListener('abort', () => ended(session), { once: true });
    session.start(`${prefix}${postPath}?session=${session.id}`, { [CALL_ID_HEADER]: record.callId });
    // Every POST is authenticated again, but the stream itself would outlive an expired credential.
    const stop = atCredentialExpiry(principal, () => {
      log.info('an SSE session ended: its credential expired', { session: session.id.slice(0, 8), subject: principal.subject });
      session.end();
    });
    session.signal.addEventListener('abort', stop, { once: true });
    log.debug('sse session opened', { session: session.id.slice(0, 8), subject: principal.subject });
  }

  /** The caller's open connections. */
  function countOf(owner: string): number {
    let n = 0;
    for (const s of live.values()) if (s.owner === owner) n++;
    return n;
  }

  /** Past a cap, the caller's own least recently used connection with nothing in flight makes room. */
  function evictIdle(owner: string): boolean {
    let oldest: SseSession | undefined;
    for (const s of live.values()) if (s.owner === owner && s.inFlight === 0 && (oldest === undefined || s.lastUsed < oldest.lastUsed)) oldest = s;
    if (oldest === undefined) return false;
    oldest.end();
    return true;
  }

  /**
   * A message POSTed to a connection's endpoint: the same front door and auth as the MCP endpoint, then
   * the connection, which only the caller that opened it may use (anyone else gets the 404 of an unknown
   * session). Accepted with 202; its answer goes onto the connection's stream.
   */
  /** Per connection: when the last notification or response the client POSTed has been handled. */
  const noticesOf = new WeakMap<SseSession, Promise<void>>();

  async function post(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const call = core.startCall('POST', true);
    const { record } = call;
    let accepted = false;
    res.once('close', () => {
      if (!accepted) call.done(closedStatus(res), !res.writableFinished);
    });
    const caller = await core.admitCaller(req, res, record, ['POST'], 'the SSE message endpoint', 'sse');
    if (caller === undefined) return;
    const received = await core.readMessage(req, res, record, caller);
    if (received === undefined) return;
    // 2024-11-05 has no batches (2025-03-26 added them, for Streamable HTTP).
    if ('batch' in received) return core.refuse(res, record, 'admission', null, { kind: 'transport', code: 'batch', status: 400, rpcCode: ErrorCode.InvalidRequest, message: 'Invalid request: batches are not supported on the HTTP+SSE transport; send one JSON-RPC message per POST' });
    const { principal, id } = received;
    // What the stream carries for this message answers its request, if it was one. A client's response
    // (its answer to the server's elicitation) or notification asks nothing: JSON-RPC 2.0 §5 answers
    // requests only, and the id of a response is the server's, which the client's own requests may use too
    // (ids are per sender), so an error written under it would reach the client as the answer to its call.
    const answers = received.kind === 'request' ? id : null;
    record.era = 'legacy';
    const session = live.get(sessionIdOf(req.url));
    if (session === undefined || session.closed || session.owner !== principalKey(principal)) return core.refuse(res, record, 'admission', id, unknownSession());
    // A message sent while initialize is under way belongs to the session initialize is creating.
    if (session.initializing !== undefined) await session.initializing;
    if (session.closed) return core.refuse(res, record, 'admission', id, unknownSession());
    if (received.method === 'initialize' && (session.version !== undefined || session.initializing !== undefined)) {
      return core.refuse(res, record, 'admission', id, { kind: 'transport', code: 'already_initialized', status: 400, rpcCode: ErrorCode.InvalidRequest, message: 'Invalid request: this SSE session is already initialized; open a new one' });
    }
    const headers = session.headersFor(req.headers);
    const admitted = admitPost(headers, received.kind, received.message);
    if (!admitted.ok) return core.refuse(res, record, 'admission', id, admitted.refusal);
    if (session.internalId !== undefined && !core.sessions.admit(session.internalId, principal).ok) {
      // The session behind the connection has ended (idle, evicted, gone upstream): so does the connection.
      session.end();
      return core.refuse(res, record, 'admission', id, unknownSession());
    }
    const traced = core.traced(headers, received);
    // A request the access stage may answer with a step-up is accepted only once that stage has passed it:
    // the 202 would leave no HTTP answer to carry the 403 and its challenge (see holdUntilAdmitted).
    const gate = received.kind === 'request' && core.mayStepUp(received.method) ? admissionGate() : undefined;
    const ctx: CallContext = {
      callId: record.callId, edge: core.token, receivedAt: record.started, httpMethod: 'POST', headers, clientAddress: caller.clientAddress, body: traced.body,
      message: received.message, kind: received.kind, ...(received.method !== undefined ? { method: received.method } : {}),
      era: 'legacy', version: admitted.version, cancel: new Cancellation(session.signal), acceptsSse: true, principal,
      clientCapabilities: received.method === 'initialize' ? received.declared : session.capabilities,
      ...(session.internalId !== undefined ? { sessionId: session.internalId } : {}),
      ...(traced.trace ? { trace: traced.trace } : {}),
      ...(gate !== undefined ? { admitted: gate.open } : {}),
    };
    // 2024-11-05 §HTTP with SSE: the POST only delivers the message; every answer comes on the stream.
    accepted = true;
    const leave = session.enter();
    // The call is in flight on the session's binding too: the per-caller cap never ends it under the call.
    const leaveBinding = session.internalId !== undefined ? core.sessions.enter(session.internalId, 'call') : undefined;
    if (gate === undefined) res.writeHead(202, { [CALL_ID_HEADER]: record.callId }).end();
    let initialized: (() => void) | undefined;
    if (received.method === 'initialize') session.initializing = new Promise<void>((r) => (initialized = r));
    // The 202 goes before the message is handled, so the client may send its next one at once: a
    // notification (notifications/initialized) or a response must still reach the upstream before what the
    // client sent after it, as it would over Streamable HTTP, where the client waits for that 202.
    const before = noticesOf.get(session);
    let noticeHandled: (() => void) | undefined;
    if (received.kind !== 'request') noticesOf.set(session, new Promise<void>((r) => (noticeHandled = r)));
    let delivered: Delivered = { status: 500, aborted: true, toolError: false };
    try {
      if (before !== undefined) await before;
      const running = core.runCall(record, ctx);
      if (gate !== undefined) {
        const stepUp = await holdUntilAdmitted(res, record.callId, answers, running, gate);
        if (stepUp !== undefined) {
          delivered = stepUp;
          record.rpcCode = ErrorCode.InvalidRequest;
          return;
        }
      }
      const outcome = await running;
      if (received.method === 'initialize') adoptSession(session, outcome, received);
      delivered = await deliverOutcome(session, outcome, {
        id: answers, callId: record.callId, log,
        ...(received.method === 'initialize' ? { onResponse: (r: Record<string, unknown>) => negotiated(session, r) } : {}),
      });
      if (delivered.toolError) record.toolError = true;
      if (delivered.errorCode !== undefined) record.rpcCode = delivered.errorCode;
      if (delivered.failure !== undefined) recordWrittenFailure(record, delivered.failure, core.token);
      if (delivered.refused !== undefined) recordWrittenRefusal(record, delivered.refused);
      afterAnswer(session, received, delivered);
    } catch (err) {
      log.error('unhandled error on the SSE endpoint', { err, callId: record.callId });
      // A POST held for the access stage's verdict is still unanswered: its answer goes on the stream too.
      if (!res.headersSent) res.writeHead(202, { [CALL_ID_HEADER]: record.callId }).end();
      const internal = { kind: 'transport' as const, code: 'internal_error', status: 500, rpcCode: ErrorCode.InternalError, message: 'Internal gateway error' };
      delivered = await deliverOutcome(session, { kind: 'refused', refusal: internal }, { id: answers, callId: record.callId, log }).catch(() => delivered);
    } finally {
      noticeHandled?.();
      if (initialized !== undefined) {
        session.initializing = undefined;
        initialized();
      }
      leave();
      leaveBinding?.();
      call.done(delivered.status, delivered.aborted);
      if (draining && session.inFlight === 0) session.end();
    }
  }

  /**
   * The POST of a request the access stage may step up, answered once the call's fate there is known:
   * 202 when the stage passes it (its answer then comes on the stream, as any other), or when the call ends
   * before or at it otherwise (that answer goes on the stream too); but a step-up (403 insufficient_scope,
   * auth refusal) is the POST's own answer, with its WWW-Authenticate challenge naming the SSE endpoint's
   * protected-resource metadata (2025-11-25/basic/authorization.mdx §Runtime Insufficient Scope Errors:
   * 403 per RFC 6750 §3.1). On the stream it was a JSON-RPC error a client could not act on: no status, no
   * challenge, no scopes. The 2024-11-05 transport lets the POST answer with any status (a client's send
   * fails on it, which rejects the call). Undefined when the call goes on.
   */
  async function holdUntilAdmitted(res: ServerResponse, callId: string, id: JsonRpcId | null, running: Promise<Outcome>, gate: AdmissionGate): Promise<Delivered | undefined> {
    const first = await Promise.race([running, gate.passed]);
    if (first !== undefined && first.kind === 'refused' && first.stage === 'access' && first.refusal.kind === 'auth') {
      const refusal = core.stepUpAt(first.refusal, 'sse');
      await writeOutcome(res, { kind: 'refused', refusal }, { era: 'legacy', id, callId, cancel: NEVER_CANCELLED });
      return { status: refusal.status, aborted: false, toolError: false };
    }
    if (!res.headersSent) res.writeHead(202, { [CALL_ID_HEADER]: callId }).end();
    return undefined;
  }

  /** initialize's answer names the legacy session Gatehouse holds for the connection (already bound to the caller). */
  function adoptSession(session: SseSession, outcome: Awaited<ReturnType<EdgeCore['runCall']>>, received: Received): void {
    if (outcome.kind === 'refused' || (outcome.kind !== 'stream' && outcome.status >= 300)) return;
    session.capabilities = received.declared;
    const issued = outcome.headers?.['mcp-session-id'];
    if (issued === undefined) return;
    session.internalId = issued;
    // A connection dropped while initialize was under way: the session it created ends at once.
    if (session.closed) return endUpstream(session);
    // The binding stays busy while the connection is open: it ends with the connection, not by idling.
    session.signal.addEventListener('abort', core.sessions.enter(issued, 'stream'), { once: true });
  }

  function negotiated(session: SseSession, response: Record<string, unknown>): void {
    const version = (response.result as { protocolVersion?: unknown } | undefined)?.protocolVersion;
    if (typeof version === 'string') session.version = version;
  }

  function afterAnswer(session: SseSession, received: Received, delivered: Delivered): void {
    // 2025-11-25/basic/transports.mdx §Session Management 4: a 404 on a session's request means the
    // session is gone; the client must start anew, so its connection ends (an unknown method is not that).
    if (delivered.status === 404 && session.internalId !== undefined && delivered.errorCode !== ErrorCode.MethodNotFound) {
      core.sessions.end(session.internalId, 'unknown');
      session.end();
      return;
    }
    if (received.method === 'notifications/initialized') listen(session);
  }

  /**
   * What a Streamable HTTP client's GET stream would carry (notifications and requests outside any call)
   * comes from the same GET through the pipeline, on the connection's session.
   */
  function listen(session: SseSession): void {
    if (session.listening || session.internalId === undefined || session.closed) return;
    session.listening = true;
    const opened = Date.now();
    // A listen stream carries no work: a drain does not wait for it.
    const call = core.startCall('GET', false, true);
    const { record } = call;
    record.era = 'legacy';
    record.subject = session.principal.subject;
    const ctx = internalContext(session, record, 'GET', session.signal);
    // A stream that gave event ids is resumed from the last one (listen-cursor.ts): what the server said
    // while it was closed is kept for that stream only, and a new GET would never hear it.
    const cursor = session.cursor;
    const resuming = cursor.lastEventId;
    if (resuming !== undefined) ctx.headers['last-event-id'] = resuming;
    void core
      .runCall(record, ctx)
      .then((outcome) => deliverOutcome(session, outcome, { id: null, callId: record.callId, log, onEvent: (ev) => cursor.see(ev) }))
      .then(
        (d) => {
          log.debug('sse session listen stream ended', { session: session.id.slice(0, 8), status: d.status });
          call.done(d.status, d.aborted);
          if (session.closed) return;
          // A 404 says the session is gone, on the listen as on a POST (afterAnswer): the catalog a reload or
          // a name check moved the upstream behind does not know a session the pass-through opened. Until 5
          // December it was taken for "no GET stream offered", and the connection stayed open and deaf.
          if (d.status === 404 && session.internalId !== undefined && d.errorCode !== ErrorCode.MethodNotFound) {
            core.sessions.end(session.internalId, 'unknown');
            session.end();
            return;
          }
          // A resume the server would not take (it no longer has the stream or its events): the next GET
          // opens the stream anew, as a Streamable HTTP client would.
          const refusedResume = resuming !== undefined && d.status !== 200;
          if (refusedResume) cursor.forget();
          // A server that closed a resumable stream is "polling": it is come back to after its `retry`.
          const resumeAfter = d.status === 200 ? cursor.resumeAfter() : undefined;
          if (resumeAfter !== undefined) return relistenAfter(session, resumeAfter);
          // A server may end its GET stream at any time (2025-11-25 transports.mdx §Listening for Messages);
          // a Streamable HTTP client would open it again, and for this connection Gatehouse is that client.
          // Not after a 4xx (the server offers no stream: 405), and backing off while it keeps ending soon.
          if (d.status === 200 || d.status >= 500 || refusedResume) relisten(session, Date.now() - opened);
        },
        (err: unknown) => {
          log.warn('sse session listen stream failed', { err, session: session.id.slice(0, 8) });
          call.done(500, true);
        },
      );
  }

  /** Opens the listen stream again after RELISTEN_MIN_MS, doubling up to RELISTEN_MAX_MS while streams end within it. */
  function relisten(session: SseSession, lastedMs: number): void {
    session.relistenMs = lastedMs >= RELISTEN_MAX_MS ? RELISTEN_MIN_MS : Math.min(RELISTEN_MAX_MS, Math.max(RELISTEN_MIN_MS, session.relistenMs * 2));
    relistenAfter(session, session.relistenMs);
  }

  function relistenAfter(session: SseSession, ms: number): void {
    setTimeout(() => {
      session.listening = false;
      listen(session);
    }, ms).unref();
  }

  /** A dropped or ended connection ends its session upstream, as a DELETE from a Streamable HTTP client would. */
  function ended(session: SseSession): void {
    live.delete(session.id);
    log.debug('sse session closed', { session: session.id.slice(0, 8) });
    endUpstream(session);
  }

  function endUpstream(session: SseSession): void {
    const internalId = session.internalId;
    if (internalId === undefined) return;
    // Counted in flight, so that a drain (which ends idle connections) waits for the session to end upstream.
    const call = core.startCall('DELETE', true, true);
    const { record } = call;
    record.era = 'legacy';
    record.subject = session.principal.subject;
    const ctx = internalContext(session, record, 'DELETE', AbortSignal.timeout(END_TIMEOUT_MS));
    let status = 500;
    void core
      .runCall(record, ctx)
      .then(
        (outcome) => {
          status = outcome.kind === 'refused' ? toWire(outcome.refusal, { era: 'legacy', id: null, callId: record.callId }).status : outcome.kind === 'stream' ? 200 : outcome.status;
          discardOutcome(outcome);
        },
        (err: unknown) => log.warn('ending the session of a closed SSE connection failed', { err, session: session.id.slice(0, 8) }),
      )
      .finally(() => {
        core.sessions.end(internalId, 'client_closed');
        call.done(status, false);
      });
  }

  function internalContext(session: SseSession, record: { callId: string; started: number }, httpMethod: 'GET' | 'DELETE', signal: AbortSignal): CallContext {
    return {
      callId: record.callId, edge: core.token, receivedAt: record.started, httpMethod, headers: session.headersFor(session.openHeaders, 'text/event-stream'),
      clientAddress: session.clientAddress, era: 'legacy', version: session.version ?? '2024-11-05', cancel: new Cancellation(signal), acceptsSse: true, principal: session.principal,
      clientCapabilities: session.capabilities, ...(session.internalId !== undefined ? { sessionId: session.internalId } : {}),
    };
  }

  return {
    ssePath,
    postPath,
    open,
    post,
    get size() {
      return live.size;
    },
    drain() {
      draining = true;
      for (const s of live.values()) if (s.inFlight === 0) s.end();
    },
    close() {
      clearInterval(sweeper);
      for (const s of live.values()) s.end();
    },
  };
}

function unknownSession() {
  return { kind: 'transport' as const, code: 'session_unknown', status: 404, rpcCode: ErrorCode.SessionNotFound, message: 'Session not found; open a new SSE connection', data: { details: { reason: 'unknown' } } };
}

function sessionIdOf(url: string | undefined): string {
  const q = url?.indexOf('?') ?? -1;
  return q === -1 ? '' : (new URLSearchParams(url!.slice(q + 1)).get('session') ?? '');
}

/** Opened by the access stage when it passes a call (CallContext.admitted); `passed` then resolves. */
interface AdmissionGate {
  readonly open: () => void;
  readonly passed: Promise<undefined>;
}

function admissionGate(): AdmissionGate {
  let open!: () => void;
  const passed = new Promise<undefined>((resolve) => (open = () => resolve(undefined)));
  return { open, passed };
}
