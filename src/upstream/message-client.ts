// Gatehouse as an MCP client of an HTTP upstream, one message at a time: POSTs a JSON-RPC message and
// yields what comes back, whether a single JSON body or an SSE stream of messages. Used where the gateway
// must read and rewrite messages (era bridging, the era probe) instead of relaying bytes. An SSE stream the
// server closes before it is done is resumed with Last-Event-ID (resumable-sse.ts).

import type { Dispatcher } from 'undici';
import type { JsonRpcId, JsonRpcMessage } from '../protocol/jsonrpc.js';
import { cancellationOf, type Cancellation } from '../pipeline/cancellation.js';
import { UpstreamSessionGone, type UpstreamMessages, type UpstreamReply } from '../pipeline/ports.js';
import type { CredentialHeaders, UpstreamCredentials } from './credentials.js';
import { dispatchRelay, type RelayResponse } from './dispatch-relay.js';
import { MAX_WHOLE_BODY_BYTES } from '../pipeline/relay-body.js';
import { toolCalled } from './tool-timeouts.js';
import type { HttpRequestLimits } from './http-tunables.js';
import { toGatewayError } from './failures.js';
import { GatewayError } from '../errors.js';
import { protocolVersionHeader } from '../protocol/versions.js';
import { readTraceContext } from '../protocol/trace-context.js';
import { readSseMessages, reopenStream, sessionHeaders, type StreamResumption } from './resumable-sse.js';
import { isEventStreamType } from '../protocol/sse.js';
import { sessionUnknown } from './session-unknown.js';

const ERROR_BODY_LIMIT = 64 * 1024;
/** The most of a refused GET's body read, to see whether it says the session is unknown. */
const GET_REFUSAL_LIMIT = 4 * 1024;
/** How long a DELETE of a session (best effort) may take. */
const DELETE_WAIT_MS = 5_000;

export class MessageClient implements UpstreamMessages {
  constructor(
    /**
     * Its pools and time limits, read at each request: a reload may change them (http-tunables.ts). A
     * subscriptions/listen gets its connection from the streams' pool, apart from the calls' (it lasts as
     * long as its listener).
     */
    private readonly limits: HttpRequestLimits,
    private readonly path: string,
    private readonly credentials: UpstreamCredentials,
    readonly upstream: string,
    /** Seconds until the upstream's response started (metrics). */
    private readonly observe: (seconds: number) => void = () => {},
    /** The upstream's `maxMessageBytes`: the most of an answer read whole, or of one SSE event. */
    private readonly maxMessageBytes = MAX_WHOLE_BODY_BYTES,
  ) {}

  /** Where a resuming GET goes (resumable-sse.ts). */
  private get target(): Parameters<typeof reopenStream>[0] {
    return { pool: this.limits.calls, path: this.path, credentials: this.credentials, upstream: this.upstream };
  }

  /**
   * POSTs one message; throws a GatewayError when the upstream cannot be reached or times out, or when
   * the gateway has no credentials for it (then nothing is sent).
   */
  async post(message: JsonRpcMessage, headers: Record<string, string>, cancel?: AbortSignal | Cancellation): Promise<UpstreamReply> {
    let res: RelayResponse;
    let auth: CredentialHeaders;
    const started = performance.now();
    try {
      auth = this.credentials.current() ?? (await this.credentials.headers());
      // undici's dispatch rather than request(): no stream object per reply (see dispatch-relay.ts).
      const options: Dispatcher.DispatchOptions = {
        path: this.path,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...traceHeaders(message), ...headers, ...auth },
        body: JSON.stringify(message),
      };
      const limits = this.limits;
      const toolTimeout = limits.toolTimeout;
      const tool = toolTimeout !== undefined ? toolCalled(message) : undefined;
      const ms = tool !== undefined ? toolTimeout!(tool) : undefined;
      if (ms !== undefined) options.headersTimeout = ms;
      const pool = (message as { method?: unknown }).method === 'subscriptions/listen' ? limits.streams : limits.calls;
      res = await dispatchRelay(pool, options, cancellationOf(cancel), this.maxMessageBytes);
    } catch (err) {
      throw toGatewayError(err, this.upstream);
    }
    this.observe((performance.now() - started) / 1000);
    this.refused(res.statusCode, auth);
    return this.toReply(res, message, headers, cancellationOf(cancel));
  }

  /**
   * A legacy GET stream (2025-11-25/basic/transports.mdx §Listening for Messages); null when the upstream
   * offers none (405) or refuses it.
   */
  async openGet(headers: Record<string, string>, signal: AbortSignal): Promise<AsyncGenerator<JsonRpcMessage, void, void> | null> {
    let res: Dispatcher.ResponseData;
    let auth: CredentialHeaders;
    try {
      auth = this.credentials.current() ?? (await this.credentials.headers());
      res = await this.limits.calls.request({ path: this.path, method: 'GET', headers: { accept: 'text/event-stream', ...headers, ...auth }, signal, bodyTimeout: 0 });
    } catch (err) {
      throw toGatewayError(err, this.upstream);
    }
    this.refused(res.statusCode, auth);
    if (res.statusCode !== 200 || !isEventStreamType(String(res.headers['content-type'] ?? ''))) {
      // 2025-11-25/basic/transports.mdx §Session Management 4: a 404 for a named session means it has ended;
      // so does a 400 that says so (session-unknown.ts), which a server of the v1 SDK's older examples sends.
      // Taken for a server without GET streams, its listens stayed open and deaf (until 5 December).
      const named = headers['mcp-session-id'] !== undefined;
      const errorText = named && res.statusCode === 400 ? await headText(res.body, GET_REFUSAL_LIMIT) : undefined;
      if (errorText === undefined) await res.body.dump().catch(() => {});
      if (named && sessionUnknown({ status: res.statusCode, errorText })) throw new UpstreamSessionGone(this.upstream);
      // An overloaded or failing server (or a proxy before it) has not said it offers no GET stream (that is a
      // 405): a failure, which the listen hub opens again after a pause. Taken for "no stream" (until
      // 5 December), it left a session's listens deaf for the session's life.
      if (res.statusCode === 429 || res.statusCode >= 500) {
        throw new GatewayError(res.statusCode === 429 || res.statusCode === 503 ? 'GW_ERR_UPSTREAM_OVERLOADED' : 'GW_ERR_UPSTREAM_UNREACHABLE', `Upstream "${this.upstream}" answered its GET stream with HTTP ${res.statusCode}`, this.upstream);
      }
      return null;
    }
    // A GET stream the server closes after giving event ids is resumed from the last one (no idle limit:
    // a listen may be quiet for hours; its reader's signal ends it).
    return readSseMessages(res.body, this.upstream, { reopen: (lastEventId, s) => reopenStream(this.target, headers, lastEventId, s, 0), cancel: cancellationOf(signal), idleLimitMs: Infinity }, this.maxMessageBytes);
  }

  /** How a POSTed request's SSE reply is taken up again if the server closes it before the response. */
  private replyResumption(message: JsonRpcMessage, sent: Record<string, string>, cancel: Cancellation): StreamResumption | undefined {
    const request = message as { id?: JsonRpcId; method?: string };
    if (request.id === undefined || request.method === undefined) return undefined;
    const headers = sessionHeaders(sent);
    return { reopen: (lastEventId, signal) => reopenStream(this.target, headers, lastEventId, signal), awaiting: request.id, cancel, idleLimitMs: this.limits.bodyMs };
  }

  /**
   * DELETE of a legacy session, best effort (2025-11-25/basic/transports.mdx §Session Management 5), with the
   * version header only where the session's revision has one, as on its other requests.
   */
  async deleteSession(sessionId: string, version: string): Promise<void> {
    try {
      const auth = this.credentials.current() ?? (await this.credentials.headers());
      // Bounded: a server that does not answer must not hold a connection for the whole headers timeout.
      const res = await this.limits.calls.request({ path: this.path, method: 'DELETE', headers: { 'mcp-session-id': sessionId, ...protocolVersionHeader(version), ...auth }, signal: AbortSignal.timeout(DELETE_WAIT_MS) });
      this.refused(res.statusCode, auth);
      await res.body.dump();
    } catch {
      // The session ends with the upstream's own idle timeout anyway.
    }
  }

  /** A 401 is about the gateway's token: drop it so the next request fetches another. */
  private refused(status: number, auth: CredentialHeaders): void {
    if (status === 401) this.credentials.invalidate(auth);
  }

  private async toReply(res: RelayResponse, message: JsonRpcMessage, sent: Record<string, string>, cancel: Cancellation): Promise<UpstreamReply> {
    const contentType = String(res.headers['content-type'] ?? '');
    const headers = res.headers as UpstreamReply['headers'];
    if (res.statusCode >= 300) {
      const text = (await res.body.head(ERROR_BODY_LIMIT).catch(() => Buffer.alloc(0))).toString('utf8');
      return { status: res.statusCode, headers, messages: fromJsonText(text), errorText: text };
    }
    if (isEventStreamType(contentType)) {
      return { status: res.statusCode, headers, messages: readSseMessages(res.body.readable(), this.upstream, this.replyResumption(message, sent, cancel), this.maxMessageBytes) };
    }
    let text: string;
    try {
      text = (await res.body.collect()).toString('utf8');
    } catch (err) {
      throw toGatewayError(err, this.upstream);
    }
    return { status: res.statusCode, headers, messages: fromJsonText(text) };
  }
}

/** The first `limit` bytes of a body as text (the rest is not read: the connection is let go); '' when it fails. */
async function headText(body: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) break;
    }
  } catch {
    return '';
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

async function* fromJsonText(text: string): AsyncGenerator<JsonRpcMessage, void, void> {
  if (text.trim() === '') return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return;
  }
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) yield parsed as JsonRpcMessage;
}

/**
 * Trace context a message carries in `_meta` also goes up as W3C headers (see protocol/trace-context.ts),
 * when it is valid: `_meta` is the client's, and what it holds is no header value until checked.
 */
function traceHeaders(message: JsonRpcMessage): Record<string, string> {
  const meta = (message as { params?: { _meta?: Record<string, unknown> } }).params?._meta;
  if (meta === undefined || meta === null || typeof meta.traceparent !== 'string') return {};
  const trace = readTraceContext(meta.traceparent, meta.tracestate);
  if (trace === undefined) return {};
  return trace.tracestate !== undefined ? { traceparent: trace.traceparent, tracestate: trace.tracestate } : { traceparent: trace.traceparent };
}
