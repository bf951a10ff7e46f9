// The byte-for-byte pass-through, for a client and an upstream of the same era: the client's bytes go up
// with an allowlist of headers plus the upstream's own credentials, and the upstream's answer comes back
// unchanged, SSE event by event. Transport failures become clear 502/503/504 answers.

import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Dispatcher, Pool } from 'undici';
import type { Era } from '../config/types.js';
import { waitForDrain } from '../edge/backpressure.js';
import { sendJson, sendJsonRpcError } from '../edge/respond.js';
import { GatewayError, gatewayErrorToWire } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { ErrorCode, idOf, type JsonRpcId } from '../protocol/jsonrpc.js';
import type { CredentialHeaders, UpstreamCredentials } from './credentials.js';
import { toGatewayError } from './failures.js';
import { relaySse } from './sse-relay.js';
import type { McpExchange } from './upstream.js';

/**
 * Client headers an upstream may see. Everything else, above all `authorization` and `cookie`, stays at
 * the gateway: the upstream gets its own credentials from config (2026-07-28 security best practices,
 * "Token Passthrough").
 */
const FORWARDED_REQUEST_HEADERS = new Set([
  'accept',
  'content-type',
  'mcp-session-id',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'last-event-id',
  'traceparent',
  'tracestate',
]);

/**
 * Upstream response headers a client may see; hop-by-hop and upstream auth challenges stay behind.
 * `content-length` goes back with bodies forwarded unchanged, which spares chunked encoding.
 */
const RETURNED_RESPONSE_HEADERS = new Set(['content-type', 'content-length', 'mcp-session-id', 'mcp-protocol-version', 'cache-control', 'retry-after', 'allow']);

export class PassThrough {
  constructor(
    private readonly pool: Pool,
    private readonly path: string,
    private readonly credentials: UpstreamCredentials,
    private readonly era: Era,
    private readonly name: string,
    private readonly log: Logger,
    /** Seconds until the upstream's response started (metrics). */
    private readonly observe: (seconds: number) => void = () => {},
  ) {}

  /** Same era on both sides: the client's bytes and the upstream's stream, relayed untouched. */
  async forward(ex: McpExchange): Promise<void> {
    if (ex.httpMethod !== 'POST' && this.era === 'modern') {
      // A modern-only upstream has no GET stream or sessions to end (streamable-http.mdx §Earlier
      // Streamable HTTP Revisions); the front door already answers modern clients' GET/DELETE with 405.
      sendJsonRpcError(ex.res, 405, null, ErrorCode.InvalidRequest, `${ex.httpMethod} is not supported by upstream "${this.name}"; use POST`, undefined, { allow: 'POST', 'x-gatehouse-call-id': ex.callId });
      return;
    }
    const requestId = ex.kind === 'request' ? idOf(ex.message) : null;
    // Static headers and a cached token are at hand: only a token fetch makes this call wait.
    const credentials = this.credentials.current() ?? (await this.awaitCredentials(ex, requestId));
    if (credentials === undefined) return;
    let upstreamRes: Dispatcher.ResponseData;
    const started = performance.now();
    try {
      upstreamRes = await this.pool.request({
        path: this.path,
        method: ex.httpMethod,
        headers: this.requestHeaders(ex, credentials),
        body: ex.body ?? null,
        signal: ex.signal,
      });
    } catch (err) {
      if (ex.signal.aborted) return; // the client left; nobody to answer
      failExchange(ex, requestId, toGatewayError(err, this.name), this.log);
      return;
    }
    this.observe((performance.now() - started) / 1000);
    const { statusCode, headers, body } = upstreamRes;
    if (statusCode === 401 || statusCode === 403) {
      // The upstream refused the gateway's own credentials: the client cannot fix that, the operator can.
      body.dump().catch(() => {});
      // A refused token may merely be revoked early: the next call fetches a new one (this one is not retried).
      if (statusCode === 401) this.credentials.invalidate(credentials);
      this.log.error('upstream refused the gateway credentials', { status: statusCode, callId: ex.callId });
      failExchange(ex, requestId, new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.name}" refused the gateway's credentials (HTTP ${statusCode})`, this.name), this.log);
      return;
    }
    // A legacy session id is bound to its caller as the answer that issues it passes (2025-11-25/basic/
    // transports.mdx §Session Management 1: the server assigns it on the InitializeResult's response).
    const issued = headers['mcp-session-id'];
    if (typeof issued === 'string' && statusCode < 300 && isInitialize(ex)) ex.bindSession(issued);
    const contentType = headerValue(headers['content-type']) ?? '';
    const outHeaders = responseHeaders(headers, ex.callId);
    if (contentType.startsWith('text/event-stream')) {
      // The relay writes whole events, never a declared length; a stream has none anyway.
      delete outHeaders['content-length'];
      outHeaders['x-accel-buffering'] = 'no';
      outHeaders['cache-control'] ??= 'no-cache';
      ex.res.writeHead(statusCode, outHeaders);
      ex.res.flushHeaders();
      await relaySse(body, ex, requestId, this.name, this.log);
      return;
    }
    ex.res.writeHead(statusCode, outHeaders);
    try {
      for await (const chunk of body) {
        if (!ex.res.write(chunk)) await waitForDrain(ex.res, ex.signal);
      }
      ex.res.end();
    } catch (err) {
      if (!ex.signal.aborted) this.log.warn('upstream body failed mid-response', { err, callId: ex.callId });
      ex.res.destroy();
    }
  }

  /** Undefined when there is no token: the exchange is answered with the failure and nothing goes up. */
  private async awaitCredentials(ex: McpExchange, requestId: JsonRpcId | null): Promise<CredentialHeaders | undefined> {
    try {
      return await this.credentials.headers();
    } catch (err) {
      if (!ex.signal.aborted) failExchange(ex, requestId, toGatewayError(err, this.name), this.log);
      return undefined;
    }
  }

  private requestHeaders(ex: McpExchange, credentials: CredentialHeaders): Record<string, string> {
    const client = ex.req.headers;
    const modern = ex.era === 'modern';
    const out: Record<string, string> = {};
    for (const key in client) {
      // Modern requests never carry session or resumption headers upstream (streamable-http.mdx §Earlier
      // Streamable HTTP Revisions: ignore Mcp-Session-Id and Last-Event-ID).
      if (modern && (key === 'mcp-session-id' || key === 'last-event-id')) continue;
      if (FORWARDED_REQUEST_HEADERS.has(key) || key.startsWith('mcp-param-')) {
        const v = client[key];
        if (typeof v === 'string') out[key] = v;
      }
    }
    // Trace context that came only in `_meta` goes up as headers too.
    if (ex.trace && out.traceparent === undefined) {
      out.traceparent = ex.trace.traceparent;
      if (ex.trace.tracestate !== undefined) out.tracestate = ex.trace.tracestate;
    }
    // Configured headers win: they are the upstream's own credentials and fixed metadata.
    return Object.assign(out, credentials);
  }
}

export function failExchange(ex: McpExchange, id: JsonRpcId | null, err: GatewayError, log: Logger): void {
  log.warn('upstream call failed', { code: err.code, err: err.cause ?? err.message, callId: ex.callId });
  const wire = gatewayErrorToWire(err, id, ex.callId);
  sendJson(ex.res, wire.status, wire.body, { ...wire.headers, 'x-gatehouse-call-id': ex.callId });
}

function responseHeaders(upstream: IncomingHttpHeaders, callId: string): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { 'x-gatehouse-call-id': callId };
  for (const key in upstream) {
    if (RETURNED_RESPONSE_HEADERS.has(key)) out[key] = upstream[key];
  }
  return out;
}

function isInitialize(ex: McpExchange): boolean {
  return ex.kind === 'request' && (ex.message as { method?: unknown }).method === 'initialize';
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
