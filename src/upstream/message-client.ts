// Gatehouse as an MCP client of an HTTP upstream, one message at a time: POSTs a JSON-RPC message and
// yields what comes back, whether a single JSON body or an SSE stream of messages. Used where the gateway
// must read and rewrite messages (era bridging, the era probe) instead of relaying bytes.

import type { Readable } from 'node:stream';
import type { Dispatcher, Pool } from 'undici';
import type { JsonRpcMessage } from '../protocol/jsonrpc.js';
import { cancellationOf, type Cancellation } from '../pipeline/cancellation.js';
import { UpstreamSessionGone, type UpstreamMessages, type UpstreamReply } from '../pipeline/ports.js';
import { SseParser } from '../protocol/sse.js';
import type { CredentialHeaders, UpstreamCredentials } from './credentials.js';
import { dispatchRelay, type RelayResponse } from './dispatch-relay.js';
import { toGatewayError } from './failures.js';

const ERROR_BODY_LIMIT = 64 * 1024;

export class MessageClient implements UpstreamMessages {
  constructor(
    private readonly pool: Pool,
    private readonly path: string,
    private readonly credentials: UpstreamCredentials,
    readonly upstream: string,
    /** Seconds until the upstream's response started (metrics). */
    private readonly observe: (seconds: number) => void = () => {},
  ) {}

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
      res = await dispatchRelay(
        this.pool,
        {
          path: this.path,
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...traceHeaders(message), ...headers, ...auth },
          body: JSON.stringify(message),
        },
        cancellationOf(cancel),
      );
    } catch (err) {
      throw toGatewayError(err, this.upstream);
    }
    this.observe((performance.now() - started) / 1000);
    this.refused(res.statusCode, auth);
    return this.toReply(res);
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
      res = await this.pool.request({ path: this.path, method: 'GET', headers: { accept: 'text/event-stream', ...headers, ...auth }, signal, bodyTimeout: 0 });
    } catch (err) {
      throw toGatewayError(err, this.upstream);
    }
    this.refused(res.statusCode, auth);
    if (res.statusCode !== 200 || !String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
      await res.body.dump().catch(() => {});
      // 2025-11-25/basic/transports.mdx §Session Management 4: a 404 for a named session means it has ended.
      if (res.statusCode === 404 && headers['mcp-session-id'] !== undefined) throw new UpstreamSessionGone(this.upstream);
      return null;
    }
    return fromSse(res.body, this.upstream);
  }

  /** DELETE of a legacy session, best effort (2025-11-25/basic/transports.mdx §Session Management 5). */
  async deleteSession(sessionId: string, version: string): Promise<void> {
    try {
      const auth = this.credentials.current() ?? (await this.credentials.headers());
      const res = await this.pool.request({ path: this.path, method: 'DELETE', headers: { 'mcp-session-id': sessionId, 'mcp-protocol-version': version, ...auth } });
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

  private async toReply(res: RelayResponse): Promise<UpstreamReply> {
    const contentType = String(res.headers['content-type'] ?? '');
    const headers = res.headers as UpstreamReply['headers'];
    if (res.statusCode >= 300) {
      const text = (await res.body.head(ERROR_BODY_LIMIT).catch(() => Buffer.alloc(0))).toString('utf8');
      return { status: res.statusCode, headers, messages: fromJsonText(text), errorText: text };
    }
    if (contentType.startsWith('text/event-stream')) return { status: res.statusCode, headers, messages: fromSse(res.body.readable(), this.upstream) };
    let text: string;
    try {
      text = (await res.body.collect()).toString('utf8');
    } catch (err) {
      throw toGatewayError(err, this.upstream);
    }
    return { status: res.statusCode, headers, messages: fromJsonText(text) };
  }
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

async function* fromSse(body: Readable, upstream: string): AsyncGenerator<JsonRpcMessage, void, void> {
  const parser = new SseParser();
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      for (const ev of parser.push(chunk)) {
        if (ev.data === undefined || ev.data === '') continue;
        try {
          yield JSON.parse(ev.data) as JsonRpcMessage;
        } catch {
          // Not JSON-RPC: nothing a bridge can relay.
        }
      }
    }
  } catch (err) {
    throw toGatewayError(err, upstream);
  } finally {
    // Stopping early (the consumer returned) must release the upstream connection.
    if (!body.destroyed) body.destroy();
  }
}

/** Trace context a message carries in `_meta` also goes up as W3C headers (see protocol/trace-context.ts). */
function traceHeaders(message: JsonRpcMessage): Record<string, string> {
  const meta = (message as { params?: { _meta?: Record<string, unknown> } }).params?._meta;
  if (meta === undefined || typeof meta.traceparent !== 'string') return {};
  return typeof meta.tracestate === 'string' ? { traceparent: meta.traceparent, tracestate: meta.tracestate } : { traceparent: meta.traceparent };
}
