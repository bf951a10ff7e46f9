// The public HTTP listener. For the MCP endpoint it is the pipeline's first two stages, admission and auth,
// because both need the HTTP request itself: the cheap guards before any parsing, the credential, then one
// read and parse of the body and the protocol checks. It then builds the CallContext, runs the rest of the
// pipeline, and writes the Outcome (answer.ts). It also serves the health and discovery endpoints.

import { randomUUID } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { AS_METADATA_PATH } from '../auth/as-metadata-mirror.js';
import type { AuthVerdict, Authenticator, ChallengedEndpoint } from '../auth/authenticator.js';
import { insufficientScope } from '../auth/challenge.js';
import type { AuthFailureLimiter } from '../auth/failure-limit.js';
import type { SessionBinding } from '../auth/session-binding.js';
import type { ListenConfig } from '../config/types.js';
import { failure, GatewayError, refusalCode, refusalOfTool, ruleOf, sessionCapRefusal, upstreamFailureOf, type AuthRefusal, type Refusal, type TransportRefusal } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { compileClientAddress, limitKey } from '../net/client-address.js';
import type { CallContext } from '../pipeline/context.js';
import { Cancellation, NEVER_CANCELLED } from '../pipeline/cancellation.js';
import { channels, CLIENT_CLOSED_STATUS, closedStatus, publishRefused, subscribe, type CallEndEvent, type CallOutcomeWord, type CallRefusedEvent, type StageWaitEvent } from '../pipeline/events.js';
import type { Outcome } from '../pipeline/outcome.js';
import { interceptFinal } from '../pipeline/final-answer.js';
import type { Principal } from '../pipeline/principal.js';
import { atCredentialExpiry } from './credential-expiry.js';
import { modernCapabilitiesFrom } from '../protocol/era-shapes.js';
import { admitBatch, admitPost, admitStreamRequest, sessionVersionRefusal } from '../protocol/front-door.js';
import { isLegacyVersion } from '../protocol/versions.js';
import { classifyBody, ErrorCode, idOf, type JsonRpcId, type JsonRpcMessage, type JsonRpcRequest } from '../protocol/jsonrpc.js';
import { META_CLIENT_CAPABILITIES } from '../protocol/methods.js';
import { putTraceInMeta, traceSources, type TraceContext } from '../protocol/trace-context.js';
import { accepts } from '../protocol/front-door.js';
import { discardOutcome, writeOutcome, sendJson } from './answer.js';
import { recordWrittenFailure, recordWrittenRefusal } from './answer-summary.js';
import { bodyInBuffer, readBody, type BodyResult } from './body.js';
import { limitConnectionsPerAddress } from './connection-limit.js';
import { repeatedSingletonHeader } from './duplicate-headers.js';
import { refusedRequest } from './refused-request.js';
import { compileHostOriginGuard } from './origin-guard.js';
import type { CallRecord, Caller, EdgeCall, EdgeCore, Received, ReceivedBatch, SessionUse } from './edge-core.js';
import { answerBatch } from './batch.js';
import { createSseEndpoint, type SseEndpoint } from './sse-endpoint.js';
import { clientAborted } from './stream-end.js';
import { DoorRefusalLog } from './door-refusal-log.js';

export interface EdgeHandlers {
  /** Runs the call through the pipeline's stages after auth and returns how it ends. */
  call(ctx: CallContext): Promise<Outcome>;
  /** Readiness of everything behind the edge: each upstream by name, and the store. */
  readiness(): Promise<{ upstreams: Record<string, boolean>; store: { kind: string; up: boolean } }>;
  /** What the caller may use, for operators debugging access (`/health`). */
  grantContext(principal: Principal): Promise<Record<string, unknown>>;
  /** The upstream label of calls: the single upstream's name, or `catalog`. */
  upstreamName(): string;
  /** Whether the running config's access stage may answer this method with a step-up (403 insufficient_scope). */
  mayStepUp(method: string): boolean;
}

export interface EdgeOptions {
  loopback: boolean;
  /** Failed authentications per client address; absent means no limit (tests of the edge alone). */
  authFailures?: AuthFailureLimiter;
  /**
   * The per-address rate limit (policy.rateLimits, per: ip): a 429 refusal, or undefined to go on; rejects when
   * the store cannot answer. Returns undefined instead of a promise when no such limit is configured, so the
   * usual call has nothing to wait for.
   */
  /** `batch`: the further messages of a batch, whose tokens are taken together (rate-limits.ts checkIpLimit). */
  ipLimit?: (address: string, principal: Principal, batch?: number) => Promise<TransportRefusal | undefined> | undefined;
  /** Read on every request, so a config reload can swap it. */
  auth: Authenticator;
  sessions: SessionBinding;
  /** Bounds of the sessions of the 2024-11-05 SSE endpoint (`sessions` in the config); defaults when absent. */
  sessionLimits?: { max: number; maxSsePerCaller: number; idleTimeoutMs: number };
}

export interface Edge {
  readonly server: Server;
  /** Identifies this edge in the pipeline's events, so subscribers of one gateway see only its calls. */
  readonly token: object;
  /** Refusals so far, by code (auth ones as `auth_<code>`), counted for operators and tests. */
  readonly refusals: ReadonlyMap<string, number>;
  /** Requests that are being answered right now (listen streams excluded: they carry no work). */
  readonly inFlight: number;
  /**
   * The first step of a shutdown (shutdown.delayMs): `/readyz` answers 503 so load balancers take this instance
   * out, while every request is still served; `/healthz` stays 200 (the process is alive, not to be restarted).
   */
  withdraw(): void;
  /** Stops accepting work: new requests on kept-alive connections get 503 and `Connection: close`. */
  startDraining(): void;
  /** Resolves when no request is in flight, or after `ms`, whichever is first; true when drained. */
  drained(ms: number): Promise<boolean>;
  /** Stops listening to the pipeline's events. */
  close(): void;
}

export function createEdge(listen: ListenConfig, handlers: EdgeHandlers, log: Logger, opts: EdgeOptions): Edge {
  const token = {};
  const guard = compileHostOriginGuard(listen, opts.loopback);
  const clientAddressOf = compileClientAddress(listen.trustedProxies);
  const refusals = new Map<string, number>();
  const unsubscribe = subscribe<CallRefusedEvent>(channels.refused, (e) => {
    if (e.edge !== token) return;
    const key = e.refusal.kind === 'auth' ? `auth_${e.code}` : e.code;
    refusals.set(key, (refusals.get(key) ?? 0) + 1);
  });
  let inFlight = 0;
  let draining = false;
  let withdrawn = false;
  const idleWaiters: Array<() => void> = [];
  const listenStreams = new Set<ServerResponse>();
  /** One per counted request; a flag, not a Set of responses, to keep response objects' shapes untouched. */
  interface InFlightSlot {
    counted: boolean;
  }
  const settle = (slot: InFlightSlot): void => {
    if (!slot.counted) return;
    slot.counted = false;
    if (--inFlight === 0) for (const w of idleWaiters.splice(0)) w();
  };
  /** Listening streams (GET, subscriptions/listen) carry no work: a drain ends them instead of waiting. */
  const markListenStream = (res: ServerResponse, slot?: InFlightSlot): void => {
    if (slot) settle(slot);
    listenStreams.add(res);
    res.on('close', () => listenStreams.delete(res));
  };

  /** A listening stream (legacy GET, subscriptions/listen) ends when its credential expires (credential-expiry.ts). */
  const endAtExpiry = (res: ServerResponse, principal: Principal): void => {
    const stop = atCredentialExpiry(principal, () => {
      if (res.destroyed) return;
      log.info('a listening stream ended: its credential expired', { subject: principal.subject });
      if (res.headersSent) res.end();
      else res.destroy();
    });
    res.once('close', stop);
  };

  /**
   * A refusal made at the edge (admission, auth): published, then written. The request's trace goes with
   * it (RefusedRequest), so its span, its `request` line and the lines here name the trace a call's would:
   * the client's, from its traceparent header, else the one tracing starts at the refusal.
   */
  const refuse = (res: ServerResponse, record: CallRecord, stage: 'admission' | 'auth', id: JsonRpcId | null, refusal: Refusal): void => {
    record.refusal = refusalCode(refusal);
    record.stage = stage;
    const request = refusedRequest(record, res.req.headers);
    publishRefused({ callId: record.callId, edge: token }, stage, refusal, request);
    const traceId = request.trace?.traceId ?? request.spanTraceId;
    let counted: Promise<void> | undefined;
    if (refusal.kind === 'auth') {
      // The answer waits until the failure is counted, so the address's next attempt already meets the limit.
      if (refusal.rejectedCredential) counted = opts.authFailures?.fail(clientAddressOf(res.req.socket.remoteAddress, res.req.headers['x-forwarded-for']));
      log.info('request refused by auth', { callId: record.callId, reason: refusal.code, status: refusal.status, traceId });
    } else {
      log.info('request refused', { callId: record.callId, reason: record.refusal, status: refusal.kind === 'transport' ? refusal.status : undefined, traceId });
    }
    const write = () => void writeOutcome(res, { kind: 'refused', refusal }, { era: 'legacy', id, callId: record.callId, cancel: NEVER_CANCELLED });
    if (counted === undefined) write();
    else void counted.then(write, write);
  };
  /**
   * A request answered before any endpoint takes it (a target naming another host, an expectation that
   * cannot be met, a drain): refused as the endpoints' refusals are, so the call id its answer carries
   * names a `request` line and a `request refused` line, as README §Logs promises.
   */
  const refuseAtDoor = (req: IncomingMessage, res: ServerResponse, refusal: Refusal): void => {
    const record: CallRecord = { callId: randomUUID(), started: performance.now(), httpMethod: req.method ?? '' };
    if (channels.end.hasSubscribers) res.on('close', () => publishEnd(record, closedStatus(res), !res.writableFinished));
    refuse(res, record, 'admission', null, refusal);
  };
  /** A refusal with no request to answer (the connection cap, Node's parser): counted, published and summed in the log. */
  const doorRefusals = new DoorRefusalLog(log);
  const refuseConnection = (code: string, status: number): void => {
    doorRefusals.refused(code);
    publishRefused({ callId: '', edge: token }, 'admission', { kind: 'transport', code, status, rpcCode: ErrorCode.InvalidRequest, message: code });
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const target = originForm(req);
    if (target === undefined) {
      return refuseAtDoor(req, res, { kind: 'transport', code: 'misdirected_request', status: 400, rpcCode: ErrorCode.InvalidRequest, message: 'The request target names another host than the Host header' });
    }
    req.url = target;
    const path = pathOf(req.url);
    // Only a POST's body is read (edge/body.ts). Any other request's body has no meaning here, and one nobody
    // reads stops Node reading the socket: a listening GET would never see its client hang up. Dropped.
    if (req.method !== 'POST') req.resume();
    if (draining) {
      res.setHeader('connection', 'close');
      return refuseAtDoor(req, res, failure(new GatewayError('GW_ERR_SHUTTING_DOWN', 'Gatehouse is shutting down')));
    }
    if (path === listen.path) {
      let slot: InFlightSlot | undefined;
      const record: CallRecord = { callId: randomUUID(), started: performance.now(), httpMethod: req.method ?? '' };
      if (req.method === 'GET') {
        markListenStream(res);
        record.listening = true;
      } else {
        inFlight++;
        slot = { counted: true };
      }
      const cancel = new Cancellation();
      // One listener for what the end of every request settles: the in-flight count, the `end` event, the
      // call's cancellation when the client left before its answer was complete, and the legacy session's use.
      const counted = slot;
      const ends = channels.end.hasSubscribers;
      // `on`, not `once`: a response closes once, and once's wrapper is two more objects per request.
      res.on('close', () => {
        if (counted !== undefined) settle(counted);
        const unfinished = !res.writableFinished;
        if (ends && record.batch !== true) publishEnd(record, unfinished && !res.headersSent ? CLIENT_CLOSED_STATUS : res.statusCode, clientAborted(res, record.listening === true));
        if (unfinished) cancel.cancel();
        if (record.session !== undefined) leaveSession(record.session, res.statusCode, record.sessionGone === true);
      });
      void handleMcp(req, res, slot, record, cancel);
      return;
    }
    if (sse !== undefined && (path === sse.ssePath || path === sse.postPath)) {
      (path === sse.ssePath ? sse.open(req, res) : sse.post(req, res)).catch((err: unknown) => internalError(res, err, undefined, null));
      return;
    }
    if (path === '/healthz' && req.method === 'GET') return sendJson(res, 200, { status: 'ok' }, {});
    const metadata = req.method === 'GET' ? opts.auth.metadata?.documentAt(path) : undefined;
    if (metadata !== undefined) {
      // RFC 9728 §3.2; public and cacheable, since it names no caller.
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=300', 'access-control-allow-origin': '*', 'content-length': Buffer.byteLength(metadata) });
      res.end(metadata);
      return;
    }
    if (path === AS_METADATA_PATH && req.method === 'GET' && opts.auth.asMetadata) {
      void opts.auth.asMetadata.document().then((body) => {
        if (body === undefined) return sendJson(res, 503, { error: 'temporarily_unavailable', message: 'The authorization server metadata cannot be fetched now' }, { 'retry-after': '10' });
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=300', 'access-control-allow-origin': '*', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      });
      return;
    }
    if (path === '/health' && req.method === 'GET') {
      handleHealth(req, res).catch((err: unknown) => {
        log.error('unhandled error on /health', { err });
        if (!res.headersSent) sendJson(res, 500, { error: 'internal_error' }, {});
      });
      return;
    }
    if (path === '/readyz' && req.method === 'GET') {
      // It names the upstreams and the store: like the MCP endpoint, not for a page that rebound a name here.
      const hostOk = guard(req.headers);
      if (!hostOk.ok) return sendJson(res, 403, { error: 'forbidden', message: `Forbidden: ${hostOk.message}` }, {});
      if (withdrawn) return sendJson(res, 503, { status: 'not_ready', reason: 'shutting_down', message: 'Gatehouse is shutting down: it still serves requests until shutdown.delayMs is over, then stops accepting connections' }, {});
      void handlers.readiness().then(
        ({ upstreams, store }) => {
          const ready = Object.values(upstreams).every(Boolean) && store.up;
          sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready', upstreams, store }, {});
        },
        () => sendJson(res, 503, { status: 'not_ready' }, {}),
      );
      return;
    }
    sendJson(res, 404, { error: 'not_found', message: `Nothing here; the MCP endpoint is ${listen.path}` }, {});
  };

  /**
   * The last resort: an error nothing turned into a refusal. Answered with the request's `id` once its body
   * was read (null before, or when it could not be read), as every error response (JSON-RPC 2.0 §5;
   * 2026-07-28/basic/index.mdx §Error Responses).
   */
  function internalError(res: ServerResponse, err: unknown, callId: string | undefined, id: JsonRpcId | null): void {
    log.error('unhandled error on the MCP endpoint', { err, callId });
    if (res.headersSent) return void res.destroy();
    void writeOutcome(res, { kind: 'refused', refusal: { kind: 'transport', code: 'internal_error', status: 500, rpcCode: ErrorCode.InternalError, message: 'Internal gateway error' } }, { era: 'legacy', id, callId: callId ?? randomUUID(), cancel: NEVER_CANCELLED });
  }

  async function handleHealth(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const record: CallRecord = { callId: randomUUID(), started: performance.now(), httpMethod: 'GET' };
    // Answered like the MCP endpoint's requests, it gets their request line: a refusal's call id names one.
    if (channels.end.hasSubscribers) res.on('close', () => publishEnd(record, closedStatus(res), !res.writableFinished));
    if (!headersAdmitted(req, res, record)) return;
    const urlRefusal = opts.auth.checkUrl(req.url);
    if (urlRefusal && !urlRefusal.ok) return refuse(res, record, 'auth', null, urlRefusal.refusal);
    if (!attemptAllowed(req, res, record)) return;
    const verdict = await opts.auth.authenticate(req.headers);
    // As the MCP endpoint (afterAuth): answered as the address stands now, past its limit even for a good one.
    if (!attemptAllowed(req, res, record)) return;
    if (!verdict.ok) return refuse(res, record, 'auth', null, verdict.refusal);
    record.subject = verdict.principal.subject;
    sendJson(res, 200, await handlers.grantContext(verdict.principal), { 'cache-control': 'no-store' });
  }

  async function handleMcp(req: IncomingMessage, res: ServerResponse, slot: InFlightSlot | undefined, record: CallRecord, cancel: Cancellation): Promise<void> {
    // Its own failures end here, not in a .catch on every call's promise.
    /** The message's id once the body is read, for the answer to a failure below. */
    let known: JsonRpcId | null = null;
    try {
      let caller = admitCaller(req, res, record, MCP_METHODS, 'the MCP endpoint');
      if (caller instanceof Promise) caller = await caller;
      if (caller === undefined) return;
      const { authed, clientAddress } = caller;
      const method = req.method as 'GET' | 'POST' | 'DELETE';
      if (method !== 'POST') {
        const principal = (authed as AuthVerdict & { ok: true }).principal;
        record.subject = principal.subject;
        const admitted = admitStreamRequest(req.headers, method);
        if (!admitted.ok) return refuse(res, record, 'admission', null, admitted.refusal);
        record.era = admitted.era;
        const session = sessionAdmitted(req, res, record, null, principal, admitted.era, method);
        if (session === false) return;
        if (session !== undefined && session.version === undefined && !(await versionSettled(req, res, record, null, principal, session))) return;
        const inSession = session !== undefined && session.version !== undefined ? sessionVersionRefusal(req.headers['mcp-protocol-version'], session.version, false) : undefined;
        if (inSession !== undefined) return refuse(res, record, 'admission', null, inSession);
        if (method === 'GET') endAtExpiry(res, principal);
        const ctx: CallContext = {
          callId: record.callId, edge: token, receivedAt: record.started, httpMethod: method, headers: req.headers, clientAddress, era: admitted.era, version: sessionVersion(session, req) ?? admitted.version,
          cancel, acceptsSse: true, principal, clientCapabilities: session?.capabilities ?? {}, ...(session ? { sessionId: session.id } : {}),
        };
        // Awaited, not returned: a rejection is caught below, and an async function returning a promise costs two more turns.
        return await answer(res, record, ctx);
      }
      // Admitted in the 'request' event's own turn, a body that came with the headers is pushed by Node's parser
      // only once this handler returns; one microtask later it is there to be read at once.
      if (!bodyInBuffer(req)) await undefined;
      let received = readMessage(req, res, record, caller);
      if (received instanceof Promise) received = await received;
      if (received === undefined) return;
      if ('batch' in received) return await batch(req, res, record, received, clientAddress, cancel);
      const { principal, message, id, kind, method: rpcMethod } = received;
      known = id;
      const admitted = admitPost(req.headers, kind, message);
      if (!admitted.ok) return refuse(res, record, 'admission', id, admitted.refusal);
      record.era = admitted.era;
      const session = sessionAdmitted(req, res, record, id, principal, admitted.era, 'POST', rpcMethod === 'initialize');
      if (session === false) return;
      // A client's answer to its server is not held: a server may ask (a ping) before its initialize's answer ends.
      if (session !== undefined && session.version === undefined && kind !== 'response' && !(await versionSettled(req, res, record, id, principal, session))) return;
      // A session whose initialize's answer named its version: the request is judged under that version,
      // header or none (sessionVersionRefusal). A string comparison where the header is there; no other lookup.
      if (session !== undefined && session.version !== undefined) {
        const inSession = sessionVersionRefusal(req.headers['mcp-protocol-version'], session.version, false);
        if (inSession !== undefined) return refuse(res, record, 'admission', id, inSession);
      }
      if (kind === 'request' && rpcMethod === 'subscriptions/listen') {
        markListenStream(res, slot);
        record.listening = true;
        endAtExpiry(res, principal);
      }
      const traced = traceOf(req.headers, received);
      // The optional members are assigned, not spread in: this runs for every call.
      const ctx: Writable<CallContext> = {
        callId: record.callId, edge: token, receivedAt: record.started, httpMethod: 'POST', headers: req.headers, clientAddress, body: traced.body, message, kind,
        era: admitted.era, version: sessionVersion(session, req) ?? admitted.version, cancel, acceptsSse: accepts(req.headers.accept, 'text/event-stream'), principal,
        clientCapabilities: admitted.era === 'modern' ? modernCapabilitiesOf(message) : (session?.capabilities ?? received.declared),
      };
      if (rpcMethod !== undefined) ctx.method = rpcMethod;
      if (session) ctx.sessionId = session.id;
      if (traced.trace) ctx.trace = traced.trace;
      return await answer(res, record, ctx);
    } catch (err) {
      internalError(res, err, record.callId, known);
    }
  }

  /** A 2025-03-26 batch (batch.ts): admitted as a whole, then each message as a call of its own. */
  async function batch(req: IncomingMessage, res: ServerResponse, record: CallRecord, received: ReceivedBatch, clientAddress: string, cancel: Cancellation): Promise<void> {
    const admitted = admitBatch(req.headers, received.batch.length);
    if (!admitted.ok) return refuse(res, record, 'admission', null, admitted.refusal);
    // A per-address limit counts messages, not HTTP requests: the request took one token at the door, the
    // further messages of the batch take one more each, together (all or none), or the batch would carry 64
    // calls for the price of one.
    if (opts.ipLimit !== undefined && received.batch.length > 1) {
      let limited: TransportRefusal | undefined;
      try {
        limited = await opts.ipLimit(clientAddress, received.principal, received.batch.length - 1);
      } catch (err) {
        return unavailableLimit(res, record, err);
      }
      if (limited !== undefined) return refuse(res, record, 'admission', null, limited);
    }
    record.era = 'legacy';
    const session = sessionAdmitted(req, res, record, null, received.principal, 'legacy', 'POST');
    if (session === false) return;
    if (session !== undefined && session.version === undefined && !(await versionSettled(req, res, record, null, received.principal, session))) return;
    // Only a 2025-03-26 session may send one: without the header, its negotiated version says which it is.
    const inSession = session !== undefined && session.version !== undefined ? sessionVersionRefusal(req.headers['mcp-protocol-version'], session.version, true) : undefined;
    if (inSession !== undefined) return refuse(res, record, 'admission', null, inSession);
    // From here each message publishes its own end; the HTTP request is only their carrier.
    record.batch = true;
    await answerBatch(core, { checkMessage: (message) => opts.auth.checkMessage(message), log }, res, received, {
      headers: req.headers,
      clientAddress,
      session,
      cancel,
      sessionGone: () => void (record.sessionGone = true),
    });
  }

  /**
   * The front door, shared by every endpoint that runs the pipeline: the cheap guards before anything is
   * read, then auth before anything is processed (2026-07-28 authorization §Token Handling). A POST without
   * a credential goes on, so that its body can say where a misplaced credential belongs (readMessage).
   * Answers at once, not as a promise, when nothing had to wait (a key or no auth, no per-address limit):
   * this runs for every call.
   */
  function admitCaller(req: IncomingMessage, res: ServerResponse, record: CallRecord, allow: readonly string[], where: string, at: ChallengedEndpoint = 'mcp'): Caller | undefined | Promise<Caller | undefined> {
    if (!headersAdmitted(req, res, record)) return undefined;
    const method = req.method ?? '';
    if (!allow.includes(method)) {
      refuse(res, record, 'admission', null, { kind: 'transport', code: 'method_not_allowed', status: 405, rpcCode: ErrorCode.InvalidRequest, message: `Method ${method} is not allowed on ${where}`, headers: { allow: allow.join(', ') } });
      return undefined;
    }
    const urlRefusal = opts.auth.checkUrl(req.url, at);
    if (urlRefusal && !urlRefusal.ok) return void refuse(res, record, 'auth', null, urlRefusal.refusal);
    if (!attemptAllowed(req, res, record)) return undefined;
    const authed = opts.auth.authenticate(req.headers, at);
    if (authed instanceof Promise) return authed.then((verdict) => afterAuth(req, res, record, verdict, at));
    return afterAuth(req, res, record, authed, at);
  }

  function afterAuth(req: IncomingMessage, res: ServerResponse, record: CallRecord, authed: AuthVerdict, at: ChallengedEndpoint): Caller | undefined | Promise<Caller | undefined> {
    // A credential checked while other guesses from the address were being checked (a token's verification
    // waits on its key set) is answered as the address stands now: past its limit, 429 even for a good one.
    if (!attemptAllowed(req, res, record)) return undefined;
    if (!authed.ok && !(authed.refusal.code === 'missing_credentials' && req.method === 'POST')) return void refuse(res, record, 'auth', null, authed.refusal);
    const clientAddress = clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for']);
    // Per-address rate limits (policy.rateLimits, per: ip): after the credential, before the body is read.
    if (authed.ok && opts.ipLimit !== undefined) {
      // No per-address limit configured (the usual case): no promise to wait for.
      const started = channels.wait.hasSubscribers ? performance.now() : undefined;
      let taking: Promise<TransportRefusal | undefined> | undefined;
      try {
        taking = opts.ipLimit(clientAddress, authed.principal);
      } catch (err) {
        return unavailableLimit(res, record, err);
      }
      if (taking !== undefined) return limitedByAddress(res, record, authed, clientAddress, at, taking, started);
    }
    return { authed, clientAddress, at };
  }

  function unavailableLimit(res: ServerResponse, record: CallRecord, err: unknown): undefined {
    res.setHeader('connection', 'close');
    return void refuse(res, record, 'admission', null, failure(new GatewayError('GW_ERR_STATE_UNAVAILABLE', 'The rate limit of this address cannot be checked now; retry later', undefined, { cause: err })));
  }

  async function limitedByAddress(res: ServerResponse, record: CallRecord, authed: AuthVerdict & { ok: true }, clientAddress: string, at: ChallengedEndpoint, taking: Promise<TransportRefusal | undefined>, started: number | undefined): Promise<Caller | undefined> {
    let limited;
    try {
      limited = await taking;
      if (started !== undefined) {
        const endedAt = performance.now();
        (record.waits ??= []).push({ stage: 'rateLimit', wait: 'store.take (address)', seconds: (endedAt - started) / 1000, endedAt });
      }
    } catch (err) {
      return unavailableLimit(res, record, err);
    }
    if (limited !== undefined) {
      // The body is never read, so the connection cannot be reused.
      res.setHeader('connection', 'close');
      return void refuse(res, record, 'admission', null, limited);
    }
    return { authed, clientAddress, at };
  }

  /**
   * The body, read once: size and time limits, UTF-8, one JSON-RPC message, the credential, none in the
   * message. At once, not as a promise, when the body had already arrived whole (the usual case).
   */
  function readMessage(req: IncomingMessage, res: ServerResponse, record: CallRecord, caller: Caller): Received | ReceivedBatch | undefined | Promise<Received | ReceivedBatch | undefined> {
    const read = readBody(req, listen.maxBodyBytes, listen.requestTimeoutMs);
    if (read instanceof Promise) return read.then((r) => messageOf(res, record, caller, r));
    return messageOf(res, record, caller, read);
  }

  function messageOf(res: ServerResponse, record: CallRecord, caller: Caller, read: BodyResult): Received | ReceivedBatch | undefined {
    const { authed } = caller;
    if (!read.ok) {
      // The rest of the body is never read, so the connection cannot be reused.
      res.setHeader('connection', 'close');
      if (read.reason === 'too_large') {
        refuse(res, record, 'admission', null, { kind: 'transport', code: 'body_too_large', status: 413, rpcCode: ErrorCode.InvalidRequest, message: `Request body exceeds ${listen.maxBodyBytes} bytes` });
      } else if (read.reason === 'timeout') {
        refuse(res, record, 'admission', null, { kind: 'transport', code: 'body_timeout', status: 408, rpcCode: ErrorCode.InvalidRequest, message: `Request body not received within ${listen.requestTimeoutMs} ms` });
      }
      return undefined;
    }
    // JSON-RPC messages MUST be UTF-8 (2026-07-28/basic/transports/index.mdx §Messages); refuse rather than
    // let a decoder quietly replace bytes that the upstream would then see differently.
    if (!isUtf8(read.body)) return void refuse(res, record, 'admission', null, { kind: 'transport', code: 'invalid_utf8', status: 400, rpcCode: ErrorCode.ParseError, message: 'Parse error: the body is not valid UTF-8' });
    const parsed = classifyBody(read.body, listen.maxJsonDepth);
    if (!authed.ok) {
      const misplaced = parsed.ok ? opts.auth.checkMessage(parsed.message, caller.at) : undefined;
      // The body is read, so its id is known: an error response carries it (2026-07-28/basic/index.mdx
      // §Error Responses); null only where it could not be read.
      return void refuse(res, record, 'auth', parsed.ok ? idOf(parsed.message) : null, misplaced && !misplaced.ok ? misplaced.refusal : authed.refusal);
    }
    const principal = authed.principal;
    record.subject = principal.subject;
    // A batch is admitted (or refused) by whoever serves the endpoint: only 2025-03-26 clients may send one.
    if (!parsed.ok && parsed.batch !== undefined) return { principal, batch: parsed.batch };
    if (!parsed.ok) return void refuse(res, record, 'admission', null, { kind: 'transport', code: parsed.code === ErrorCode.ParseError ? 'parse_error' : 'invalid_request', status: 400, rpcCode: parsed.code, message: parsed.message });
    const message = parsed.message;
    const id = idOf(message);
    const rpcMethod = (message as { method?: string }).method;
    // Only a string is a method; anything else is refused by the front door, and its end event says POST.
    if (typeof rpcMethod === 'string') record.method = rpcMethod;
    const misplaced = opts.auth.checkMessage(message, caller.at);
    if (misplaced && !misplaced.ok) return void refuse(res, record, 'auth', id, misplaced.refusal);
    const received: Received = { principal, message, kind: parsed.kind, id, body: read.body, declared: initializeCapabilities(message) };
    if (rpcMethod !== undefined) received.method = rpcMethod;
    return received;
  }

  /** Trace context from the headers also travels in `_meta` (the spec's place for it); only then are the client's bytes re-encoded. */
  function traceOf(headers: IncomingHttpHeaders, received: Received): { body: Buffer; trace?: TraceContext } {
    const traced = traceSources(headers, received.message);
    if (traced.context === undefined) return { body: received.body };
    if (!traced.missingFromMeta || received.kind !== 'request') return { body: received.body, trace: traced.context };
    putTraceInMeta(received.message as { params?: Record<string, unknown> }, traced.context);
    return { body: Buffer.from(JSON.stringify(received.message)), trace: traced.context };
  }

  /** The rest of the pipeline, then the answer. */
  async function answer(res: ServerResponse, record: CallRecord, ctx: CallContext): Promise<void> {
    // runCall's steps, with the pipeline awaited here: one async frame fewer on every call.
    callStarts(record, ctx);
    if (isLegacyInitialize(ctx)) return await answerInitialize(res, record, ctx, await initializeSession(record, ctx));
    // Awaited, not returned (an async function returning a promise costs two more turns); `write` is no frame of its own.
    await write(res, record, ctx, callEnded(record, ctx, await handlers.call(ctx)));
  }

  /**
   * An initialize's answer, after which nothing more is learnt of the version of the session it issued: the
   * requests of that session that came meanwhile without a version stop waiting for it (versionSettled).
   */
  async function answerInitialize(res: ServerResponse, record: CallRecord, ctx: CallContext, outcome: Outcome): Promise<void> {
    const issued = outcome.kind === 'refused' ? undefined : outcome.headers?.['mcp-session-id'];
    try {
      await write(res, record, ctx, outcome);
    } finally {
      if (issued !== undefined) opts.sessions.answered(issued);
    }
  }

  /** Writes the outcome; a promise while it is written, nothing when the client is gone. */
  function write(res: ServerResponse, record: CallRecord, ctx: CallContext, outcome: Outcome): Promise<unknown> | undefined {
    if (ctx.cancel.aborted) {
      // The client is gone; whatever was produced for it is dropped.
      discardOutcome(outcome);
      return undefined;
    }
    return writeOutcome(res, outcome, {
      era: ctx.era, id: ctx.kind === 'request' ? idOf(ctx.message) : null, callId: ctx.callId, cancel: ctx.cancel, log,
      onSummary: (summary) => {
        if (summary.toolError) record.toolError = true;
        if (summary.errorCode !== undefined) record.rpcCode = summary.errorCode;
        if (summary.failure !== undefined) recordWrittenFailure(record, summary.failure, token);
        if (summary.refused !== undefined) recordWrittenRefusal(record, summary.refused);
      },
    });
  }

  /** The pipeline after auth; a legacy session issued by the answer is bound to the caller before it returns. */
  async function runCall(record: CallRecord, ctx: CallContext): Promise<Outcome> {
    callStarts(record, ctx);
    if (isLegacyInitialize(ctx)) return initializeSession(record, ctx);
    return callEnded(record, ctx, await handlers.call(ctx));
  }

  /**
   * A legacy initialize holds a place among its caller's session bindings while it runs (SessionBinding.reserve):
   * without room, one that no call is running on, it is refused 503 session_cap before the upstream creates a session.
   */
  async function initializeSession(record: CallRecord, ctx: CallContext): Promise<Outcome> {
    const place = opts.sessions.reserve(ctx.principal);
    if (place === undefined) {
      const refusal = sessionCapRefusal('This caller holds as many sessions as it may (sessions.max), each with a call in flight; retry later, or end a session (DELETE) first');
      publishRefused({ callId: record.callId, edge: token }, 'admission', refusal);
      log.info('request refused', { callId: record.callId, reason: refusal.code, status: refusal.status });
      return callEnded(record, ctx, { kind: 'refused', refusal, stage: 'admission' });
    }
    try {
      return bindIssuedSession(ctx, callEnded(record, ctx, await handlers.call(ctx)));
    } finally {
      place();
    }
  }

  function callStarts(record: CallRecord, ctx: CallContext): void {
    record.ctx = ctx;
    if (channels.start.hasSubscribers) channels.start.publish({ callId: ctx.callId, edge: token, ctx });
    // The edge's own waits, made before the call had a context (and a span) to belong to.
    if (record.waits !== undefined && channels.wait.hasSubscribers) for (const w of record.waits) channels.wait.publish({ callId: ctx.callId, edge: token, ...w } satisfies StageWaitEvent);
  }

  /** What the edge keeps of the pipeline's outcome: the refusal, for the end event (a legacy session the answer issues is bound by initializeSession). */
  function callEnded(record: CallRecord, ctx: CallContext, ended: Outcome): Outcome {
    // A tool refusal is shaped for the called tool here, once, for every edge that writes it (errors.ts refusalOfTool).
    const shaped = ended.kind === 'refused' ? refusalOfTool(ended.refusal, ctx) : undefined;
    const outcome: Outcome = ended.kind === 'refused' && shaped !== ended.refusal ? { ...ended, refusal: shaped! } : ended;
    if (outcome.kind === 'refused') {
      record.refusal = refusalCode(outcome.refusal);
      record.stage = outcome.stage ?? 'upstream';
      // An upstream failure with no stage was found after the stages, in the upstream's answer (a body that
      // is no answer to the request, one nested too deep: final-answer.ts): the upstream stage publishes the
      // failures it tags, and nothing published this one, so the metrics' refusals and the span's refusal
      // event missed what the log and the tool counter show. Published here, once. (A refusal a stage made
      // through the final answer, such as the output check's, is published by that stage and is no
      // upstream failure.)
      if (outcome.stage === undefined && upstreamFailureOf(outcome.refusal) !== undefined) publishRefused({ callId: record.callId, edge: token }, 'upstream', outcome.refusal);
      if (upstreamFailureOf(outcome.refusal) !== undefined) record.upstreamFailed = true;
      const rule = ruleOf(outcome.refusal);
      if (rule !== undefined) record.rule = rule;
    }
    return outcome;
  }

  /**
   * 2025-11-25/basic/transports.mdx §Session Management 1: the server assigns a session id on the
   * InitializeResult's answer. It belongs to whoever sent that initialize, from the moment it passes here.
   * The version the answer negotiated (lifecycle.mdx §Version Negotiation) is read as the answer goes out,
   * whoever made it (an upstream's relayed bytes, the catalog, a bridge): the session's later requests are
   * judged under it. Once per session; an answer without it (an error) leaves the session's version unknown.
   */
  function bindIssuedSession(ctx: CallContext, outcome: Outcome): Outcome | Promise<Outcome> {
    if (outcome.kind === 'refused') return outcome;
    const status = outcome.kind === 'stream' ? 200 : outcome.status;
    const issued = outcome.headers?.['mcp-session-id'];
    if (status >= 300) return outcome;
    opts.sessions.initializeAnswered(issued !== undefined);
    if (issued === undefined) return outcome;
    const params = (ctx.message as JsonRpcRequest).params;
    const declared = params?.capabilities;
    opts.sessions.bind(issued, ctx.principal, modernCapabilitiesFrom(isRecord(declared) ? declared : {}));
    return interceptFinal(outcome, ctx, async ({ response }) => {
      const version = response.result?.protocolVersion;
      if (typeof version === 'string' && isLegacyVersion(version)) opts.sessions.negotiated(issued, version);
    }, NEGOTIATED_VERSION_MARKER);
  }

  /**
   * Repeated singleton headers first: which copy would count is ambiguous, and a proxy in front may have
   * read another one. Then Host and Origin: a rebound DNS name learns nothing, not even how the body is
   * parsed.
   */
  function headersAdmitted(req: IncomingMessage, res: ServerResponse, record: CallRecord): boolean {
    const repeated = repeatedSingletonHeader(req.rawHeaders);
    if (repeated !== undefined) {
      res.setHeader('connection', 'close');
      refuse(res, record, 'admission', null, { kind: 'transport', code: 'repeated_header', status: 400, rpcCode: ErrorCode.InvalidRequest, message: `Bad request: the ${repeated} header must appear once` });
      return false;
    }
    const verdict = guard(req.headers);
    if (verdict.ok) return true;
    refuse(res, record, 'admission', null, { kind: 'transport', code: 'host_origin', status: 403, rpcCode: ErrorCode.InvalidRequest, message: `Forbidden: ${verdict.message}` });
    return false;
  }

  /** An address past its failed-authentication limit is refused before any credential is looked at. */
  function attemptAllowed(req: IncomingMessage, res: ServerResponse, record: CallRecord): boolean {
    const limiter = opts.authFailures;
    // Almost always nobody is blocked: no address is worked out.
    if (limiter === undefined || !limiter.anyBlocked) return true;
    const wait = limiter.retryAfter(clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for']));
    if (wait === 0) return true;
    refuse(res, record, 'auth', null, { kind: 'transport', code: 'auth_failure_limit', status: 429, rpcCode: ErrorCode.InvalidRequest, message: `Too many failed authentication attempts from this address; retry in ${wait} s`, data: { retryAfter: wait }, headers: { 'retry-after': String(wait) } });
    return false;
  }

  /**
   * A legacy request naming a session is served only to the caller the session was issued to; an id
   * Gatehouse never saw issued, or one bound to someone else, is answered 404 as unknown. While the request
   * is open the session counts as busy; a DELETE that succeeds, or a 404 from whoever holds the session,
   * ends the binding. Modern requests ignore the header (streamable-http.mdx §Earlier Streamable HTTP
   * Revisions), so it is not looked at for them. False when refused; undefined when no session is named.
   */
  function sessionAdmitted(req: IncomingMessage, res: ServerResponse, record: CallRecord, id: JsonRpcId | null, principal: Principal, era: string, method: 'POST' | 'GET' | 'DELETE', initialize = false): AdmittedSession | undefined | false {
    if (era !== 'legacy') return undefined;
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId !== 'string') {
      // 2025-11-25/basic/transports.mdx §Session Management 2: where the endpoint issues session ids, a
      // request without one (other than initialize) is answered 400, before any stage governs it. Until 5
      // December it went on as a session-less call: it opened approvals, took rate-limit tokens and budget,
      // and only then met the upstream's (or Gatehouse's own session table's) refusal.
      if (initialize || !opts.sessions.requiresSession) return undefined;
      refuse(res, record, 'admission', id, sessionRequired());
      return false;
    }
    const admission = opts.sessions.admit(sessionId, principal);
    if (!admission.ok) {
      refuse(res, record, 'admission', id, sessionUnknown(admission.reason));
      return false;
    }
    // Left by the request's one close listener (onRequest), after the call's own end.
    record.session = { id: sessionId, method, leave: opts.sessions.enter(sessionId, method === 'GET' ? 'stream' : 'call') };
    return { id: sessionId, capabilities: admission.capabilities, version: admission.version };
  }

  /**
   * A session request that names no version of its own, while its session's version is not known: when the
   * initialize that issued the session is still being answered (its client had the id from the answer's
   * headers and did not wait for the body), it waits until that answer says which version was negotiated,
   * or is over (SessionBinding.versionSettled), and is then judged under that version; until 5 December it
   * was judged under 2025-03-26. Resolves at once, without a promise of its own, in every other case (a
   * header names the version, or the answer is over). False when refused: the session ended meanwhile.
   */
  function versionSettled(req: IncomingMessage, res: ServerResponse, record: CallRecord, id: JsonRpcId | null, principal: Principal, session: AdmittedSession): boolean | Promise<boolean> {
    if (req.headers['mcp-protocol-version'] !== undefined) return true;
    const settling = opts.sessions.versionSettled(session.id);
    if (settling === undefined) return true;
    return settling.then(() => {
      const again = opts.sessions.admit(session.id, principal);
      if (!again.ok) {
        refuse(res, record, 'admission', id, sessionUnknown(again.reason));
        return false;
      }
      session.version = again.version;
      return true;
    });
  }

  /** The end of a request's use of its session: a 404 (its own, or a batch message's) or a DELETE that succeeded ends the binding. */
  function leaveSession(session: SessionUse, status: number, gone: boolean): void {
    session.leave();
    if (status === 404 || gone) opts.sessions.end(session.id, 'unknown');
    else if (session.method === 'DELETE' && status < 300) opts.sessions.end(session.id, 'client_closed');
  }

  /** The `end` event of one request, once its answer is complete or the client has gone. */
  function publishEnd(record: CallRecord, status: number, aborted: boolean, internal = false): void {
    const ctx = record.ctx;
    // An upstream that failed the call is an upstream error, whether it answered 5xx or Gatehouse found it
    // unreachable, timed out or broken (a refusal with the failure's code and stage `upstream` in the line).
    const outcome: CallOutcomeWord = aborted ? 'aborted' : record.upstreamFailed === true ? 'upstream_error' : record.refusal !== undefined ? 'refused' : status >= 500 ? 'upstream_error' : status >= 400 ? 'client_error' : record.toolError ? 'tool_error' : 'ok';
    const name = ctx?.kind === 'request' ? (ctx.message as JsonRpcRequest).params?.name : undefined;
    // Built by assignment, not spreads: one event per request, for every subscriber. The upstream is the one
    // the call was routed to (a catalog member, by its configured name), else the one serving this edge:
    // with several upstreams that is the catalog, which answers lists and unknown names itself.
    const event: CallEndEvent = { callId: record.callId, edge: token, httpMethod: record.httpMethod, status, outcome, seconds: (performance.now() - record.started) / 1000, upstream: ctx?.route?.upstream ?? handlers.upstreamName() };
    if (ctx) event.ctx = ctx;
    if (record.method !== undefined) event.method = record.method;
    if (record.era !== undefined) event.era = record.era;
    if (record.subject !== undefined) event.subject = record.subject;
    if (internal) event.internal = true;
    if (record.rpcCode !== undefined) event.rpcCode = record.rpcCode;
    if (record.refused !== undefined) event.request = record.refused;
    if (record.refusal !== undefined) {
      event.refusal = record.refusal;
      event.stage = record.stage!;
      if (record.rule !== undefined) event.rule = record.rule;
    }
    if (typeof name === 'string') {
      if (ctx!.method === 'prompts/get') event.prompt = name;
      else if (ctx!.method === 'tools/call') event.tool = name;
    }
    channels.end.publish(event);
  }

  /** A request the SSE endpoint accounts for itself: in flight (when counted) until `done`, which publishes its end. */
  function startCall(httpMethod: string, counted: boolean, internal = false): EdgeCall {
    const record: CallRecord = { callId: randomUUID(), started: performance.now(), httpMethod };
    const slot: InFlightSlot = { counted };
    if (counted) inFlight++;
    let ended = false;
    return {
      record,
      done(status, aborted) {
        if (ended) return;
        ended = true;
        settle(slot);
        if (channels.end.hasSubscribers) publishEnd(record, status, aborted, internal);
      },
    };
  }

  const mayStepUp = (method: string | undefined): boolean => method !== undefined && handlers.mayStepUp(method);
  // The access stage names the MCP endpoint's metadata; another endpoint (SSE) names its own resource's.
  const stepUpAt = (refusal: AuthRefusal, at: ChallengedEndpoint): AuthRefusal => (refusal.scopes === undefined ? refusal : insufficientScope(refusal.scopes, refusal.message, opts.auth.metadataUrlFor(at)));
  const core: EdgeCore = { token, sessions: opts.sessions, startCall, admitCaller, readMessage, traced: traceOf, refuse, runCall, mayStepUp, stepUpAt };
  const sse: SseEndpoint | undefined =
    listen.ssePath === undefined ? undefined : createSseEndpoint(core, { ssePath: listen.ssePath, mcpPath: listen.path, ...(listen.publicUrl !== undefined ? { publicUrl: listen.publicUrl } : {}), ...(opts.sessionLimits ?? DEFAULT_SESSION_LIMITS) }, log);

  // Slow clients cannot hold a socket: headers within headersTimeoutMs, the whole request (headers and
  // body) within both timeouts, checked every second rather than Node's default 30 s.
  const server = createServer(
    {
      headersTimeout: listen.headersTimeoutMs,
      requestTimeout: listen.headersTimeoutMs + listen.requestTimeoutMs,
      keepAliveTimeout: listen.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.min(1_000, listen.headersTimeoutMs),
    },
    onRequest,
  );
  // CONNECT asks for a tunnel, which Gatehouse never opens; without a listener Node would drop the socket
  // without a word.
  server.on('connect', (req: IncomingMessage, socket: import('node:stream').Duplex) => {
    refuseConnection('method_not_allowed', 405);
    const body = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: ErrorCode.InvalidRequest, message: 'Method CONNECT is not allowed: Gatehouse opens no tunnels' } });
    socket.on('error', () => socket.destroy());
    if (socket.writable) socket.end(`HTTP/1.1 405 Method Not Allowed\r\nallow: GET, POST, DELETE\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    else socket.destroy();
    void req;
  });
  // RFC 9110 §10.1.1: an expectation other than 100-continue cannot be met; say so in the documented shape.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    res.setHeader('connection', 'close');
    refuseAtDoor(req, res, { kind: 'transport', code: 'expectation_failed', status: 417, rpcCode: ErrorCode.InvalidRequest, message: 'Only "Expect: 100-continue" is supported; send the request without this Expect header' });
    req.resume();
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // A client that hung up is gone, not malformed (Node's own default handler does the same).
    if (err.code === 'ECONNRESET') return void socket.destroy();
    const answer = CLIENT_ERROR_ANSWERS[err.code ?? ''] ?? CLIENT_ERROR_ANSWERS.default!;
    refuseConnection(answer.reason, Number(answer.status.slice(0, 3)));
    log.debug('malformed or slow HTTP from a client', { err, reason: answer.reason });
    if (socket.writable) socket.end(`HTTP/1.1 ${answer.status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    else socket.destroy();
  });
  // Counted per connection's own peer: a proxy's X-Forwarded-For says nothing about whose socket it is.
  limitConnectionsPerAddress(server, listen.maxConnectionsPerIp, (peer) => limitKey(peer ?? ''), () => refuseConnection('connection_limit', 429));

  return {
    server,
    token,
    refusals,
    get inFlight() {
      return inFlight;
    },
    withdraw() {
      withdrawn = true;
    },
    startDraining() {
      withdrawn = true;
      draining = true;
      // Listening streams carry no work in progress: end them now so clients reconnect elsewhere.
      for (const res of listenStreams) res.end();
      sse?.drain();
      server.closeIdleConnections();
    },
    drained(ms) {
      if (inFlight === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), ms);
        idleWaiters.push(() => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    },
    close() {
      unsubscribe();
      sse?.close();
      doorRefusals.close();
    },
  };
}

const MCP_METHODS = ['GET', 'POST', 'DELETE'] as const;
/** Only an answer that names a protocol version is read for it; relayed bytes without one pass unparsed. */
const NEGOTIATED_VERSION_MARKER = { marker: '"protocolVersion"' };
/** The config's `sessions` defaults, for an edge built without them (tests of the edge alone). */
const DEFAULT_SESSION_LIMITS = { max: 1000, maxSsePerCaller: 16, idleTimeoutMs: 1_800_000 };

/** The version a session request speaks without a header of its own: its session's (sessionVersionRefusal); undefined with a header. */
function sessionVersion(session: AdmittedSession | undefined, req: IncomingMessage): string | undefined {
  return session?.version !== undefined && req.headers['mcp-protocol-version'] === undefined ? session.version : undefined;
}

/** The legacy session a request names, admitted for its caller; `version` once its initialize's answer named it. */
interface AdmittedSession {
  id: string;
  capabilities: Record<string, unknown>;
  version: string | undefined;
}

/** 404 for a session id the caller may not use (never issued, another's, or ended: `reason` says which to its owner). */
function sessionUnknown(reason: string): TransportRefusal {
  return { kind: 'transport', code: 'session_unknown', status: 404, rpcCode: ErrorCode.SessionNotFound, message: 'Session not found; initialize a new session', data: { details: { reason } } };
}

/** A legacy request without Mcp-Session-Id where the endpoint issues them (SessionBinding.requiresSession); as session-table.ts words it. */
function sessionRequired(): TransportRefusal {
  return { kind: 'transport', code: 'session_required', status: 400, rpcCode: ErrorCode.InvalidRequest, message: 'Mcp-Session-Id header is required; send initialize first' };
}

/** A context while the edge builds it. */
type Writable<T> = { -readonly [K in keyof T]: T[K] };

function isLegacyInitialize(ctx: CallContext): boolean {
  return ctx.era === 'legacy' && ctx.method === 'initialize';
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function modernCapabilitiesOf(message: JsonRpcMessage): Record<string, unknown> {
  const meta = (message as { params?: { _meta?: Record<string, unknown> } }).params?._meta;
  const caps = meta?.[META_CLIENT_CAPABILITIES];
  return isRecord(caps) ? caps : {};
}

/** A legacy client's capabilities before it has a session: what its initialize declares. */
function initializeCapabilities(message: JsonRpcMessage): Record<string, unknown> {
  if ((message as { method?: unknown }).method !== 'initialize') return {};
  const declared = (message as JsonRpcRequest).params?.capabilities;
  return modernCapabilitiesFrom(isRecord(declared) ? declared : {});
}

/**
 * RFC 9112 §3.2.2: a server must accept the absolute form of the request target (`POST http://host/mcp`).
 * Its authority takes the place of Host; Gatehouse, whose Host checks read the header, accepts it only
 * when the two agree, and goes on with the origin form. Undefined: they disagree.
 */
function originForm(req: IncomingMessage): string | undefined {
  const url = req.url ?? '/';
  if (url.startsWith('/') || url === '*') return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return url;
  if (parsed.host.toLowerCase() !== String(req.headers.host ?? '').toLowerCase()) return undefined;
  return `${parsed.pathname}${parsed.search}`;
}

function pathOf(url: string | undefined): string {
  if (url === undefined) return '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** What a client hears when its HTTP cannot be read at all (Node's parser errors, timeouts). */
const CLIENT_ERROR_ANSWERS: Record<string, { status: string; reason: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: '408 Request Timeout', reason: 'request_timeout' },
  HPE_HEADER_OVERFLOW: { status: '431 Request Header Fields Too Large', reason: 'headers_too_large' },
  default: { status: '400 Bad Request', reason: 'malformed_http' },
};
