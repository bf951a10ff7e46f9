// The client side of an SSE response that Gatehouse itself produces (rather than relays): opens the stream
// with the right headers, writes one JSON-RPC message per event, and drops a client that stops reading
// instead of buffering without bound.

import type { ServerResponse } from 'node:http';
import { formatSseMessage } from '../protocol/sse.js';

/** A client this far behind is cut off: it can reconnect, the gateway's memory cannot grow. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

export class SseWriter {
  private opened = false;

  constructor(private readonly res: ServerResponse, private readonly extraHeaders: Record<string, string> = {}) {}

  get isOpen(): boolean {
    return this.opened && !this.res.destroyed && !this.res.writableEnded;
  }

  get closed(): boolean {
    return this.res.destroyed || this.res.writableEnded;
  }

  open(status = 200): void {
    if (this.opened) return;
    this.opened = true;
    this.res.writeHead(status, {
      ...this.extraHeaders,
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
    this.res.flushHeaders();
  }

  /** Writes one message; returns false when the client is gone or was cut off for falling behind. */
  send(message: unknown): boolean {
    if (this.closed) return false;
    this.open();
    this.res.write(formatSseMessage(message));
    if (this.res.writableLength > MAX_BUFFERED_BYTES) {
      this.res.destroy();
      return false;
    }
    return true;
  }

  /** An SSE comment line: keeps idle streams alive through proxies; clients ignore it. */
  comment(text = 'keep-alive'): void {
    if (this.isOpen) this.res.write(`: ${text}\n\n`);
  }

  end(): void {
    if (!this.closed) this.res.end();
  }
}
