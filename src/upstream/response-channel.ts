// The answer to one client POST that Gatehouse composes itself: plain JSON when only the final response
// is sent, switching to SSE the moment a related message must go out first (2025-11-25/basic/transports.mdx
// §Sending Messages 5: the server returns either application/json or text/event-stream).

import { sendJson } from '../edge/respond.js';
import { SseWriter } from '../edge/sse-writer.js';
import { GatewayError, gatewayErrorToWire } from '../errors.js';
import type { JsonRpcMessage, JsonRpcResponse } from '../protocol/jsonrpc.js';
import { idOf } from '../protocol/jsonrpc.js';
import type { McpExchange } from './upstream.js';
import type { MessageSink } from '../pipeline/message-queue.js';

export class ResponseChannel implements MessageSink {
  private readonly headers: Record<string, string>;
  private readonly sse: SseWriter;
  readonly acceptsSse: boolean;
  private done = false;

  constructor(private readonly ex: McpExchange) {
    this.headers = { 'x-gatehouse-call-id': ex.callId };
    this.acceptsSse = (ex.req.headers.accept ?? '').includes('text/event-stream');
    this.sse = new SseWriter(ex.res, this.headers);
  }

  get closed(): boolean {
    return this.done || this.ex.res.destroyed || this.ex.res.writableEnded;
  }

  comment(): void {
    this.sse.comment();
  }

  onClose(callback: () => void): void {
    this.ex.res.on('close', callback);
  }

  setHeader(name: string, value: string): void {
    this.headers[name] = value;
  }

  /** Sends a message that belongs before the final response; false when this channel cannot carry it. */
  push(message: JsonRpcMessage): boolean {
    if (!this.acceptsSse || this.closed) return false;
    return this.sse.send(message);
  }

  finish(response: JsonRpcResponse): void {
    if (this.closed) return;
    this.done = true;
    if (this.sse.isOpen) {
      this.sse.send(response);
      this.sse.end();
    } else {
      sendJson(this.ex.res, 200, response, this.headers);
    }
  }

  fail(err: GatewayError): void {
    if (this.closed) return;
    this.done = true;
    const wire = gatewayErrorToWire(err, idOf(this.ex.message), this.ex.callId);
    if (this.sse.isOpen) {
      this.sse.send(wire.body);
      this.sse.end();
    } else {
      sendJson(this.ex.res, wire.status, wire.body, { ...this.headers, ...wire.headers });
    }
  }
}
