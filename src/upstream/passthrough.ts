// The byte-for-byte pass-through, for a client and an upstream of the same era: the client's bytes go up
// with an allowlist of headers plus the upstream's own credentials, and the upstream's answer comes back
// unchanged, SSE event by event (the edge relays it). Transport failures become clear 502/503/504 answers.
// A legacy answer stream the upstream closes before its response is resumed here, not by the client.

import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { Era } from '../config/types.js';
import { failure, GatewayError } from '../errors.js';
import { redactText, type Logger } from '../log/logger.js';
import type { CallContext } from '../pipeline/context.js';
import { Cancellation } from '../pipeline/cancellation.js';
import { refused, type AnswerHeaders, type Outcome } from '../pipeline/outcome.js';
import { ErrorCode, idOf, type JsonRpcId } from '../protocol/jsonrpc.js';
import { readTraceContext, upstreamBody } from '../protocol/trace-context.js';
import type { CredentialHeaders, UpstreamCredentials } from './credentials.js';
import { toGatewayError } from './failures.js';
import { MAX_WHOLE_BODY_BYTES, RelayBody } from '../pipeline/relay-body.js';
import { dispatchRelay, type RelayResponse } from './dispatch-relay.js';
import type { HttpRequestLimits } from './http-tunables.js';
import { answeredWhole, readSseText, reopenStream, sessionHeaders } from './resumable-sse.js';
import { isEventStreamType } from '../protocol/sse.js';
import { hasProtocolVersionHeader } from '../protocol/versions.js';
import { scopeModernAnswer } from './modern-answer-stream.js';
import { progressTokenIn } from '../protocol/answer-stream-rule.js';

/** How long a streamed answer is given to end before it is relayed as a stream (see forward). */
const SSE_SETTLE_MS = 2;

/**
 * Client headers an upstream may see. Everything else, above all `authorization` and `cookie`, stays at
 * the gateway: the upstream gets its own credentials from config (2026-07-28 security best practices,
 * "Token Passthrough"). `traceparent` and `tracestate` go on only as valid trace context (requestHeaders).
 */
const FORWARDED_REQUEST_HEADERS = new Set([
  'content-type',
  'mcp-session-id',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'last-event-id',
]);

/** What every POST Gatehouse relays accepts: both answer types, listed (see requestHeaders). */
const POST_ACCEPT = 'application/json, text/event-stream';

/**
 * Upstream response headers a client may see; hop-by-hop and upstream auth challenges stay behind.
 * `content-length` goes back with bodies forwarded unchanged, which spares chunked encoding.
 */
const RETURNED_RESPONSE_HEADERS = new Set(['content-type', 'content-length', 'mcp-session-id', 'mcp-protocol-version', 'cache-control', 'retry-after', 'allow']);

export class PassThrough {
  constructor(
    /** Its pools and time limits, read at each request: a reload may change them (http-tunables.ts). */
    private readonly limits: HttpRequestLimits,
    private readonly path: string,
    private readonly credentials: UpstreamCredentials,
    private readonly era: Era,
    private readonly name: string,
    private readonly log: Logger,
    /** Seconds until the upstream's response started (metrics). */
    private readonly observe: (seconds: number) => void = () => {},
    /** The upstream's `maxMessageBytes`: the most of an answer held whole, or of one SSE event. */
    private readonly maxMessageBytes = MAX_WHOLE_BODY_BYTES,
  ) {
    this.target = {
      get pool() {
        return limits.calls;
      },
      path,
      credentials,
      upstream: name,
    };
  }

  /** Where a resuming GET goes (resumable-sse.ts). */
  private readonly target: Parameters<typeof reopenStream>[0];

  /** What a relayed body's failure is called (made once, not per call). */
  private readonly failureOf = (err: unknown): GatewayError => toGatewayError(err, this.name);

  /** Same era on both sides: the client's bytes up, and the upstream's answer as a relay for the edge. */
  async forward(ctx: CallContext): Promise<Outcome> {
    if (ctx.httpMethod !== 'POST' && this.era === 'modern') {
      // A modern-only upstream has no GET stream or sessions to end (streamable-http.mdx §Earlier
      // Streamable HTTP Revisions); the front door already answers modern clients' GET/DELETE with 405.
      return refused({ kind: 'transport', code: 'method_not_allowed', status: 405, rpcCode: ErrorCode.InvalidRequest, message: `${ctx.httpMethod} is not supported by upstream "${this.name}"; use POST`, headers: { allow: 'POST' } });
    }
    const requestId = ctx.kind === 'request' ? idOf(ctx.message) : null;
    let credentials: CredentialHeaders;
    let upstreamRes: RelayResponse;
    const started = performance.now();
    try {
      // Static headers and a cached token are at hand: only a token fetch makes this call wait.
      credentials = this.credentials.current() ?? (await this.credentials.headers());
      const options: Dispatcher.DispatchOptions = {
        path: this.path,
        method: ctx.httpMethod,
        headers: this.requestHeaders(ctx, credentials),
        // The client's bytes, unless tracing's CLIENT span replaces the trace context in `_meta`.
        body: upstreamBody(ctx) ?? null,
      };
      const limits = this.limits;
      if (limits.toolTimeout !== undefined && ctx.method === 'tools/call' && ctx.route?.kind === 'tools') {
        const ms = limits.toolTimeout(ctx.route.original);
        if (ms !== undefined) options.headersTimeout = ms;
      }
      // A listening stream holds its connection for as long as its client stays.
      const pool = ctx.httpMethod === 'GET' || ctx.method === 'subscriptions/listen' ? limits.streams : limits.calls;
      upstreamRes = await dispatchRelay(pool, options, ctx.cancel, this.maxMessageBytes);
    } catch (err) {
      return this.failed(ctx, toGatewayError(err, this.name));
    }
    this.observe((performance.now() - started) / 1000);
    const { statusCode, headers, body } = upstreamRes;
    if (statusCode === 401 || statusCode === 403) {
      // The upstream refused the gateway's own credentials: the client cannot fix that, the operator can.
      body.dump();
      // A refused token may merely be revoked early: the next call fetches a new one (this one is not retried).
      if (statusCode === 401) this.credentials.invalidate(credentials);
      this.log.error('upstream refused the gateway credentials', { status: statusCode, callId: ctx.callId });
      return this.failed(ctx, new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.name}" refused the gateway's credentials (HTTP ${statusCode})`, this.name));
    }
    if (statusCode >= 500) {
      // The upstream failed: the client hears it as a gateway failure with a code it can act on (502), the
      // way the bridged paths report it, with the upstream's own words when it gave any.
      const said = await upstreamErrorText(body, String(headers['content-type'] ?? ''));
      const code = statusCode === 503 ? 'GW_ERR_UPSTREAM_OVERLOADED' : statusCode === 504 ? 'GW_ERR_UPSTREAM_TIMEOUT' : 'GW_ERR_UPSTREAM_BAD_RESPONSE';
      return this.failed(ctx, new GatewayError(code, `Upstream "${this.name}" failed with HTTP ${statusCode}${said ? `: ${said}` : ''}`, this.name));
    }
    const contentType = String(headers['content-type'] ?? '');
    if (requestId !== null && statusCode < 300) {
      const broken = notAnAnswer(contentType, body);
      if (broken !== undefined) {
        body.dump();
        return this.failed(ctx, new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.name}" answered a request with HTTP ${statusCode} and ${broken}`, this.name));
      }
    }
    const sse = requestId !== null && isEventStreamType(contentType);
    // Most answers sent as a stream are short (an SDK server's one event, then the end) but come in a few
    // writes: waiting a moment for the end lets them be handled whole, without the stream machinery a long
    // stream needs (bench/README.md §SSE answers). A long stream's first events wait that moment at most.
    if (sse && !body.settled) await body.endsWithin(SSE_SETTLE_MS);
    let relayed = body;
    if (sse && ctx.era === 'modern') {
      const params = (ctx.message as { params?: { notifications?: unknown } } | undefined)?.params;
      const listen = ctx.method === 'subscriptions/listen';
      relayed = scopeModernAnswer(body, { id: requestId, progressToken: progressTokenIn(params), listen, asked: listen ? params?.notifications : undefined, withheld: ctx.withheldUris }, this.name, this.log, ctx.callId);
    }
    else if (sse && ctx.era === 'legacy' && !answeredWholeBody(body, requestId)) relayed = this.resumable(ctx, body, requestId);
    return { kind: 'relay', status: statusCode, headers: responseHeaders(headers), body: relayed, requestId, upstream: this.name, failureOf: this.failureOf };
  }

  /**
   * A legacy request's SSE answer, taken up again by Gatehouse when the upstream closes it before the
   * response (2025-11-25/basic/transports.mdx §Sending Messages 6: a GET with Last-Event-ID after its
   * `retry`), so the client sees one stream and the call stays governed to its end: its answer is checked,
   * audited and stored like any other, which a resumption by the client (a GET of its own) would escape.
   */
  private resumable(ctx: CallContext, body: RelayBody, requestId: JsonRpcId): RelayBody {
    const headers = sessionHeaders(ctx.headers);
    // Stopped when the client leaves, or when the relay is dropped before its end (its deadline passed).
    const dropped = new Cancellation();
    const stop = ctx.cancel.linkedWith(dropped);
    const text = readSseText(body.readable(), this.name, {
      reopen: (lastEventId, signal) => reopenStream(this.target, headers, lastEventId, signal),
      awaiting: requestId,
      cancel: stop.cancel,
      idleLimitMs: this.limits.bodyMs,
    }, this.maxMessageBytes);
    const relayed = Readable.from(text, { objectMode: false });
    relayed.once('close', stop.dispose);
    return RelayBody.fromReadable(relayed, () => dropped.cancel(), this.maxMessageBytes);
  }

  private failed(ctx: CallContext, err: GatewayError): Outcome {
    if (!ctx.cancel.aborted) this.log.warn('upstream call failed', { code: err.code, err: err.cause ?? err.message, callId: ctx.callId });
    return refused(failure(err));
  }

  private requestHeaders(ctx: CallContext, credentials: CredentialHeaders): Record<string, string> {
    const client = ctx.headers;
    const modern = ctx.era === 'modern';
    const out: Record<string, string> = {};
    for (const key in client) {
      // Modern requests never carry session or resumption headers upstream (streamable-http.mdx §Earlier
      // Streamable HTTP Revisions: ignore Mcp-Session-Id and Last-Event-ID).
      if (modern && (key === 'mcp-session-id' || key === 'last-event-id')) continue;
      // The routing headers (Mcp-Method, Mcp-Name, Mcp-Param-*) are 2026-07-28's and are checked against the
      // body for modern requests only (the front door): on a legacy request they are whatever the client
      // wrote, and a proxy or WAF behind Gatehouse that routes by them would trust a `Mcp-Method: ping` over
      // a tools/call body.
      if (!modern && (key === 'mcp-method' || key === 'mcp-name' || key.startsWith('mcp-param-'))) continue;
      if (FORWARDED_REQUEST_HEADERS.has(key) || key.startsWith('mcp-param-')) {
        const v = client[key];
        if (typeof v === 'string') out[key] = v;
      }
    }
    // A session's request without MCP-Protocol-Version speaks the version its initialize negotiated (the edge
    // judged it so, front-door sessionVersionRefusal): the upstream, which negotiated it, is told the same
    // rather than left to assume 2025-03-26 (2025-11-25/basic/transports.mdx §Protocol Version Header).
    if (!modern && ctx.sessionId !== undefined && out['mcp-protocol-version'] === undefined && hasProtocolVersionHeader(ctx.version)) out['mcp-protocol-version'] = ctx.version;
    // The front door took an Accept that admits both answer types, wildcards included (`*/*`); toward the
    // upstream Gatehouse is the client, which MUST list both types (streamable-http.mdx and 2025-11-25
    // transports.mdx §Sending Messages 2), and the SDK servers refuse a wildcard with 406. A GET's stream
    // takes only SSE (§Listening for Messages).
    const accept = ctx.httpMethod === 'POST' ? POST_ACCEPT : ctx.httpMethod === 'GET' ? 'text/event-stream' : client.accept;
    if (typeof accept === 'string') out.accept = accept;
    // The client's trace headers go on only as valid trace context: a malformed or repeated traceparent (two
    // joined by Node) is no context at all, and then its tracestate is not read either (W3C Trace Context
    // §4.3). Trace context that came only in `_meta` goes up as headers too; a CLIENT span's (tracing)
    // replaces the client's.
    const trace = ctx.upstreamTrace ?? (client.traceparent !== undefined ? readTraceContext(client.traceparent, client.tracestate) : undefined) ?? ctx.trace;
    if (trace !== undefined) {
      out.traceparent = trace.traceparent;
      if (trace.tracestate !== undefined) out.tracestate = trace.tracestate;
    }
    // Configured headers win: they are the upstream's own credentials and fixed metadata.
    return Object.assign(out, credentials);
  }
}

/** At most a line of what a failed upstream said: its JSON-RPC error message, or the start of its text. */
async function upstreamErrorText(body: RelayBody, contentType: string): Promise<string | undefined> {
  // The first 4 KiB are plenty for a line; the rest is not read.
  const start = await body.head(4096).catch(() => undefined);
  if (start === undefined) return undefined;
  const text = start.toString('utf8');
  if (contentType.startsWith('application/json')) {
    try {
      const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
      if (typeof message === 'string') return redactText(message.slice(0, 200));
    } catch {
      // not JSON after all: the text itself
    }
  }
  if (!contentType.startsWith('text/plain') && !contentType.startsWith('application/json')) return undefined;
  const line = text.replace(/\s+/g, ' ').trim().slice(0, 200);
  return line === '' ? undefined : redactText(line);
}

function responseHeaders(upstream: RelayResponse['headers']): AnswerHeaders {
  const out: AnswerHeaders = {};
  for (const key in upstream) {
    if (!RETURNED_RESPONSE_HEADERS.has(key)) continue;
    const v = upstream[key];
    if (typeof v === 'string') out[key] = v;
    else if (Array.isArray(v) && v.length > 0) out[key] = v.join(', ');
  }
  return out;
}

/**
 * Why a 2xx answer to a request cannot be its response, seen without parsing it (the pass-through does not
 * parse what it relays; a governed call's answer is read whole and checked in full, pipeline/final-answer.ts):
 * a request is answered with one JSON object or an SSE stream (2025-11-25/basic/transports.mdx §Sending
 * Messages 5; 2026-07-28 streamable-http.mdx §Sending Messages 6), so another media type, none (a 202 with
 * no body) or a whole JSON body that does not open and close as an object (an HTML page, an answer cut
 * short) is not one. A JSON body still coming is relayed as it comes: judging it would mean holding it.
 * Undefined when it may be the answer (a wrong id or a body that is JSON of another shape still passes).
 */
function notAnAnswer(contentType: string, body: RelayBody): string | undefined {
  if (contentType.startsWith('application/json')) return objectText(body);
  if (isEventStreamType(contentType)) return undefined;
  const type = contentType.toLowerCase().trimStart();
  if (type.startsWith('application/json')) return objectText(body);
  return contentType === '' ? 'no content type (neither a JSON body nor an SSE stream)' : `content type "${contentType.slice(0, 100)}" (neither JSON nor an SSE stream)`;
}

/** JSON white space (RFC 8259 §2). */
function isJsonSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/**
 * Why a whole JSON body is not one object, judged by its first and last characters other than white space
 * (looked for across chunks, which are not joined for it); undefined if it may be one, or is still coming.
 */
function objectText(body: RelayBody): string | undefined {
  const chunks = body.peekChunks();
  if (chunks === undefined) return undefined;
  let first: number | undefined;
  let last: number | undefined;
  for (let c = 0; c < chunks.length && first === undefined; c++) {
    const chunk = chunks[c]!;
    for (let i = 0; i < chunk.length; i++) {
      if (isJsonSpace(chunk[i]!)) continue;
      first = chunk[i];
      break;
    }
  }
  for (let c = chunks.length - 1; c >= 0 && last === undefined; c--) {
    const chunk = chunks[c]!;
    for (let i = chunk.length - 1; i >= 0; i--) {
      if (isJsonSpace(chunk[i]!)) continue;
      last = chunk[i];
      break;
    }
  }
  if (first === undefined) return 'an empty JSON body';
  return first === 0x7b && last === 0x7d ? undefined : 'a body that is not one JSON object';
}

/** A legacy SSE answer that came whole, its response in it: nothing to resume, so no resuming reader. */
function answeredWholeBody(body: RelayBody, requestId: JsonRpcId): boolean {
  const reading = body.peekWholeSse();
  return reading !== undefined && answeredWhole(reading, requestId);
}
