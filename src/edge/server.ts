// The public HTTP listener: health endpoints, and the MCP endpoint's cheap guards (method, body size, one
// parse of the body) before an exchange is handed to the upstream. It knows nothing of what the upstream
// is; the gateway passes a handler in.

import { randomUUID } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { AS_METADATA_PATH } from '../auth/as-metadata-mirror.js';
import type { AuthVerdict, Authenticator } from '../auth/authenticator.js';
import type { AuthFailureLimiter } from '../auth/failure-limit.js';
import { compileClientAddress, limitKey } from '../net/client-address.js';
import type { Principal } from '../pipeline/principal.js';
import type { SessionBinding } from '../auth/session-binding.js';
import type { ListenConfig } from '../config/types.js';
import type { ClientEra } from '../protocol/versions.js';
import type { ExchangeRecord } from '../metrics/metrics.js';
import type { Logger } from '../log/logger.js';
import { admitPost, admitStreamRequest, type Refusal } from '../protocol/front-door.js';
import { classifyBody, ErrorCode, idOf, type JsonRpcId } from '../protocol/jsonrpc.js';
import { putTraceInMeta, traceSources } from '../protocol/trace-context.js';
import type { McpExchange } from '../upstream/upstream.js';
import { readBody } from './body.js';
import { limitConnectionsPerAddress } from './connection-limit.js';
import { repeatedSingletonHeader } from './duplicate-headers.js';
import { compileHostOriginGuard } from './origin-guard.js';
import { sendJson, sendJsonRpcError } from './respond.js';

export interface EdgeHandlers {
  /** Answers one MCP exchange completely. */
  mcp(ex: McpExchange): Promise<void>;
  /** Readiness of everything behind the edge, by upstream name. */
  readiness(): Promise<Record<string, boolean>>;
  /** What the caller may use, for operators debugging access (`/health`). */
  grantContext(principal: Principal): Promise<Record<string, unknown>>;
  /** The upstream label for metrics: the single upstream's name, or `catalog`. */
  upstreamName(): string;
  /** The tool label for metrics: the name when the catalog knows it, else undefined. */
  toolLabel(name: string): string | undefined;
}

/** Where the edge reports what it saw (metrics); absent when metrics are off, so nothing is measured. */
export interface EdgeObserver {
  exchange(record: ExchangeRecord): void;
  authFailure(reason: string): void;
  refusal(reason: string): void;
}

export interface EdgeOptions {
  loopback: boolean;
  /** Failed authentications per client address; absent means no limit (tests of the edge alone). */
  authFailures?: AuthFailureLimiter;
  /** Read on every request, so a config reload can swap it. */
  auth: Authenticator;
  sessions: SessionBinding;
  observer?: EdgeObserver;
  /** One info line per answered request (default on). */
  requestLog?: boolean;
}

export interface Edge {
  readonly server: Server;
  /** Refusals at the front door so far, by reason (counted for operators and tests). */
  readonly refusals: ReadonlyMap<string, number>;
  /** Counts a refusal made past the edge (e.g. by an upstream adapter's header checks). */
  countRefusal(reason: string): void;
  /** Requests that are being answered right now (listen streams excluded: they carry no work). */
  readonly inFlight: number;
  /** Stops accepting work: new requests on kept-alive connections get 503 and `Connection: close`. */
  startDraining(): void;
  /** Resolves when no request is in flight, or after `ms`, whichever is first; true when drained. */
  drained(ms: number): Promise<boolean>;
}

export function createEdge(listen: ListenConfig, handlers: EdgeHandlers, log: Logger, opts: EdgeOptions): Edge {
  const guard = compileHostOriginGuard(listen, opts.loopback);
  const refusals = new Map<string, number>();
  /** Auth refusals carry their challenge headers; the reason is counted as `auth_<reason>`. */
  const { observer } = opts;
  const requestLog = opts.requestLog !== false && log.enabled('info');
  const clientAddressOf = compileClientAddress(listen.trustedProxies);
  const refuseAuth = (res: ServerResponse, callId: string, id: JsonRpcId | null, verdict: AuthVerdict & { ok: false }): void => {
    const r = verdict.refusal;
    if (r.rejectedCredential) opts.authFailures?.fail(clientAddressOf(res.req.socket.remoteAddress, res.req.headers['x-forwarded-for']));
    refusals.set(`auth_${r.reason}`, (refusals.get(`auth_${r.reason}`) ?? 0) + 1);
    observer?.authFailure(r.reason);
    log.info('request refused by auth', { callId, reason: r.reason, status: r.status });
    sendJsonRpcError(res, r.status, id, ErrorCode.InvalidRequest, r.message, { reason: r.reason }, { ...r.headers, 'x-gatehouse-call-id': callId });
  };
  const countRefusalOnly = (reason: string): void => {
    refusals.set(reason, (refusals.get(reason) ?? 0) + 1);
    opts.observer?.refusal(reason);
  };
  const refuse = (res: ServerResponse, callId: string, id: JsonRpcId | null, r: Refusal, extraHeaders: Record<string, string> = {}): void => {
    countRefusalOnly(r.reason);
    log.info('request refused', { callId, reason: r.reason, status: r.status, code: r.code });
    sendJsonRpcError(res, r.status, id, r.code, r.message, r.data, { ...extraHeaders, 'x-gatehouse-call-id': callId });
  };
  let inFlight = 0;
  let draining = false;
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

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const path = pathOf(req.url);
    if (draining) {
      res.setHeader('connection', 'close');
      sendJsonRpcError(res, 503, null, ErrorCode.InternalError, 'Gatehouse is shutting down', { code: 'GW_ERR_SHUTTING_DOWN', retryable: true }, { 'retry-after': '1' });
      return;
    }
    if (path === listen.path) {
      let slot: InFlightSlot | undefined;
      if (req.method === 'GET') markListenStream(res);
      else {
        inFlight++;
        const counted: InFlightSlot = { counted: true };
        slot = counted;
        res.on('close', () => settle(counted));
      }
      handleMcp(req, res, slot).catch((err: unknown) => {
        log.error('unhandled error on the MCP endpoint', { err });
        if (!res.headersSent) sendJsonRpcError(res, 500, null, ErrorCode.InternalError, 'Internal gateway error');
        else res.destroy();
      });
      return;
    }
    if (path === '/healthz' && req.method === 'GET') return sendJson(res, 200, { status: 'ok' });
    if (opts.auth.metadata?.paths.has(path) && req.method === 'GET') {
      // RFC 9728 §3.2; public and cacheable, since it names no caller.
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=300', 'access-control-allow-origin': '*', 'content-length': Buffer.byteLength(opts.auth.metadata.body) });
      res.end(opts.auth.metadata.body);
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
        if (!res.headersSent) sendJson(res, 500, { error: 'internal_error' });
      });
      return;
    }
    if (path === '/readyz' && req.method === 'GET') {
      void handlers.readiness().then(
        (upstreams) => {
          const ready = Object.values(upstreams).every(Boolean);
          sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready', upstreams });
        },
        () => sendJson(res, 503, { status: 'not_ready' }),
      );
      return;
    }
    sendJson(res, 404, { error: 'not_found', message: `Nothing here; the MCP endpoint is ${listen.path}` });
  };

  async function handleHealth(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const callId = randomUUID();
    if (!headersAdmitted(req, res, callId)) return;
    const urlRefusal = opts.auth.checkUrl(req.url);
    if (urlRefusal && !urlRefusal.ok) return refuseAuth(res, callId, null, urlRefusal);
    if (!attemptAllowed(req, res, callId)) return;
    const verdict = await opts.auth.authenticate(req.headers);
    if (!verdict.ok) return refuseAuth(res, callId, null, verdict);
    sendJson(res, 200, await handlers.grantContext(verdict.principal), { 'cache-control': 'no-store' });
  }

  async function handleMcp(req: IncomingMessage, res: ServerResponse, slot: InFlightSlot | undefined): Promise<void> {
    const started = performance.now();
    const callId = randomUUID();
    if (!headersAdmitted(req, res, callId)) return;
    const method = req.method;
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
      return refuse(res, callId, null, { status: 405, code: ErrorCode.InvalidRequest, reason: 'method_not_allowed', message: `Method ${method} is not allowed on the MCP endpoint` }, { allow: 'GET, POST, DELETE' });
    }
    // Auth before anything is processed (2026-07-28 authorization §Token Handling); the body is read
    // only to say where a misplaced credential belongs.
    const urlRefusal = opts.auth.checkUrl(req.url);
    if (urlRefusal && !urlRefusal.ok) return refuseAuth(res, callId, null, urlRefusal);
    if (!attemptAllowed(req, res, callId)) return;
    let authed = opts.auth.authenticate(req.headers);
    if (authed instanceof Promise) authed = await authed;
    if (!authed.ok && !(authed.refusal.reason === 'missing_credentials' && method === 'POST')) return refuseAuth(res, callId, null, authed);
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    if (method !== 'POST') {
      const principal = (authed as AuthVerdict & { ok: true }).principal;
      const admitted = admitStreamRequest(req.headers, method);
      if (!admitted.ok) return refuse(res, callId, null, admitted.refusal, admitted.refusal.status === 405 ? { allow: 'POST' } : {});
      if (!sessionAdmitted(req, res, callId, null, principal, admitted.era, method)) return;
      await handlers.mcp({ callId, req, res, httpMethod: method, era: admitted.era, version: admitted.version, signal: controller.signal, principal, bindSession: (id) => opts.sessions.bind(id, principal) });
      return;
    }
    const read = await readBody(req, listen.maxBodyBytes, listen.requestTimeoutMs);
    if (!read.ok) {
      // The rest of the body is never read, so the connection cannot be reused.
      res.setHeader('connection', 'close');
      if (read.reason === 'too_large') {
        refuse(res, callId, null, { status: 413, code: ErrorCode.InvalidRequest, reason: 'body_too_large', message: `Request body exceeds ${listen.maxBodyBytes} bytes` });
      } else if (read.reason === 'timeout') {
        refuse(res, callId, null, { status: 408, code: ErrorCode.InvalidRequest, reason: 'body_timeout', message: `Request body not received within ${listen.requestTimeoutMs} ms` });
      }
      return;
    }
    // JSON-RPC messages MUST be UTF-8 (2026-07-28/basic/transports/index.mdx §Messages); refuse rather than
    // let a decoder quietly replace bytes that the upstream would then see differently.
    if (!isUtf8(read.body)) return refuse(res, callId, null, { status: 400, code: ErrorCode.ParseError, reason: 'invalid_utf8', message: 'Parse error: the body is not valid UTF-8' });
    const parsed = classifyBody(read.body, listen.maxJsonDepth);
    if (!authed.ok) {
      const misplaced = parsed.ok ? opts.auth.checkMessage(parsed.message) : undefined;
      return refuseAuth(res, callId, null, misplaced && !misplaced.ok ? misplaced : authed);
    }
    if (!parsed.ok) return refuse(res, callId, null, { status: 400, code: parsed.code, reason: parsed.batch ? 'batch' : parsed.code === ErrorCode.ParseError ? 'parse_error' : 'invalid_request', message: parsed.message });
    const misplaced = opts.auth.checkMessage(parsed.message);
    if (misplaced && !misplaced.ok) return refuseAuth(res, callId, idOf(parsed.message), misplaced);
    const admitted = admitPost(req.headers, parsed.kind, parsed.message);
    if (!admitted.ok) return refuse(res, callId, idOf(parsed.message), admitted.refusal);
    const principal = authed.principal;
    if (!sessionAdmitted(req, res, callId, idOf(parsed.message), principal, admitted.era, 'POST')) return;
    const rpcMethod = (parsed.message as { method?: string }).method;
    if (parsed.kind === 'request' && rpcMethod === 'subscriptions/listen') markListenStream(res, slot);
    let body = read.body;
    const traced = traceSources(req.headers, parsed.message);
    if (traced.context && traced.missingFromMeta && parsed.kind === 'request') {
      // Trace context from the headers also travels in `_meta` (the spec's place for it); only then are
      // the client's bytes re-encoded.
      putTraceInMeta(parsed.message as { params?: Record<string, unknown> }, traced.context);
      body = Buffer.from(JSON.stringify(parsed.message));
    }
    const exchange: McpExchange = {
      callId, req, res, httpMethod: 'POST', body, message: parsed.message, kind: parsed.kind, era: admitted.era, version: admitted.version, signal: controller.signal, principal,
      bindSession: (id) => opts.sessions.bind(id, principal),
      ...(traced.context ? { trace: traced.context } : {}),
    };
    if (requestLog || observer) observeExchange(exchange, rpcMethod, started);
    await handlers.mcp(exchange);
  }

  /** One log line per answered request, and the metrics for it. */
  function observeExchange(ex: McpExchange, method: string | undefined, started: number): void {
    ex.res.once('close', () => {
      const name = method === 'tools/call' || method === 'prompts/get' ? (ex.message as { params?: { name?: unknown } }).params?.name : undefined;
      const seconds = (performance.now() - started) / 1000;
      const aborted = !ex.res.writableFinished;
      const upstream = handlers.upstreamName();
      if (requestLog) {
        log.info('request', {
          callId: ex.callId,
          method,
          era: ex.era,
          // Client-chosen strings are cut, so one request cannot write a megabyte into the log.
          subject: clip(ex.principal.subject),
          ...(typeof name === 'string' ? { tool: clip(name) } : {}),
          upstream,
          status: ex.res.statusCode,
          outcome: aborted ? 'aborted' : (ex.refusal ?? (ex.res.statusCode < 400 ? 'ok' : 'error')),
          durationMs: Math.round(seconds * 1e6) / 1e3,
          ...(ex.trace ? { traceId: ex.trace.traceId } : {}),
        });
      }
      observer?.exchange({
        method,
        era: ex.era,
        upstream,
        status: ex.res.statusCode,
        aborted,
        seconds,
        tool: method === 'tools/call' && typeof name === 'string' ? handlers.toolLabel(name) : undefined,
        refusal: ex.refusal,
      });
    });
  }

  /**
   * Repeated singleton headers first: which copy would count is ambiguous, and a proxy in front may have
   * read another one. Then Host and Origin: a rebound DNS name learns nothing, not even how the body is
   * parsed.
   */
  function headersAdmitted(req: IncomingMessage, res: ServerResponse, callId: string): boolean {
    const repeated = repeatedSingletonHeader(req.rawHeaders);
    if (repeated !== undefined) {
      res.setHeader('connection', 'close');
      refuse(res, callId, null, { status: 400, code: ErrorCode.InvalidRequest, reason: 'repeated_header', message: `Bad request: the ${repeated} header must appear once` });
      return false;
    }
    const verdict = guard(req.headers);
    if (verdict.ok) return true;
    refuse(res, callId, null, { status: 403, code: ErrorCode.InvalidRequest, reason: 'host_origin', message: `Forbidden: ${verdict.message}` });
    return false;
  }

  /** An address past its failed-authentication limit is refused before any credential is looked at. */
  function attemptAllowed(req: IncomingMessage, res: ServerResponse, callId: string): boolean {
    const limiter = opts.authFailures;
    if (limiter === undefined) return true;
    const wait = limiter.retryAfter(clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for']));
    if (wait === 0) return true;
    refuse(res, callId, null, { status: 429, code: ErrorCode.InvalidRequest, reason: 'auth_failure_limit', message: `Too many failed authentication attempts from this address; retry in ${wait} s`, data: { retryAfter: wait } }, { 'retry-after': String(wait) });
    return false;
  }

  /**
   * A legacy request naming a session is served only to the caller the session was issued to; an id
   * Gatehouse never saw issued, or one bound to someone else, is answered 404 as unknown. While the request
   * is open the session counts as busy; a DELETE that succeeds, or a 404 from whoever holds the session,
   * ends the binding. Modern requests ignore the header (streamable-http.mdx §Earlier Streamable HTTP
   * Revisions), so it is not looked at for them.
   */
  function sessionAdmitted(req: IncomingMessage, res: ServerResponse, callId: string, id: JsonRpcId | null, principal: Principal, era: ClientEra, method: 'POST' | 'GET' | 'DELETE'): boolean {
    if (era !== 'legacy') return true;
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId !== 'string') return true;
    const admission = opts.sessions.admit(sessionId, principal);
    if (!admission.ok) {
      refuse(res, callId, id, { status: 404, code: ErrorCode.SessionNotFound, reason: 'session_unknown', message: 'Session not found; initialize a new session', data: { details: { reason: admission.reason } } });
      return false;
    }
    const leave = opts.sessions.enter(sessionId);
    res.once('close', () => {
      leave();
      if (res.statusCode === 404) opts.sessions.end(sessionId, 'unknown');
      else if (method === 'DELETE' && res.statusCode < 300) opts.sessions.end(sessionId, 'client_closed');
    });
    return true;
  }

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
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // A client that hung up is gone, not malformed (Node's own default handler does the same).
    if (err.code === 'ECONNRESET') return void socket.destroy();
    const answer = CLIENT_ERROR_ANSWERS[err.code ?? ''] ?? CLIENT_ERROR_ANSWERS.default!;
    countRefusalOnly(answer.reason);
    log.debug('malformed or slow HTTP from a client', { err, reason: answer.reason });
    if (socket.writable) socket.end(`HTTP/1.1 ${answer.status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    else socket.destroy();
  });
  // Counted per connection's own peer: a proxy's X-Forwarded-For says nothing about whose socket it is.
  limitConnectionsPerAddress(server, listen.maxConnectionsPerIp, (peer) => limitKey(peer ?? ''), () => countRefusalOnly('connection_limit'));

  return {
    server,
    refusals,
    countRefusal(reason) {
      refusals.set(reason, (refusals.get(reason) ?? 0) + 1);
      observer?.refusal(reason);
    },
    get inFlight() {
      return inFlight;
    },
    startDraining() {
      draining = true;
      // Listening streams carry no work in progress: end them now so clients reconnect elsewhere.
      for (const res of listenStreams) res.end();
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
  };
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

const LOG_FIELD_MAX = 200;

function clip(s: string): string {
  return s.length <= LOG_FIELD_MAX ? s : `${s.slice(0, LOG_FIELD_MAX)}…`;
}
