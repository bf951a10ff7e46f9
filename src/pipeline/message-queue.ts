// A MessageSink read as an async stream of messages: lets a component that answers clients (a bridge) serve
// another component instead (the catalog), which reads the call's messages as if from an upstream.

import { GatewayError, gatewayErrorToWire } from '../errors.js';
import type { JsonRpcId, JsonRpcMessage, JsonRpcResponse } from '../protocol/jsonrpc.js';

/** Where the messages of one call go: a client's HTTP exchange, or a queue another part of Gatehouse reads. */
export interface MessageSink {
  readonly closed: boolean;
  /** A message before the final response; false when this sink cannot carry it. */
  push(message: JsonRpcMessage): boolean;
  finish(response: JsonRpcResponse): void;
  fail(err: GatewayError): void;
  /** Keeps a long stream alive through idle proxies (SSE comment); a no-op where meaningless. */
  comment(): void;
  /** Runs once when the reader goes away before the call is finished. */
  onClose(callback: () => void): void;
}

export class MessageQueue implements MessageSink {
  private readonly items: JsonRpcMessage[] = [];
  private done = false;
  private wake?: () => void;
  private readonly closers: Array<() => void> = [];
  readonly messages: AsyncGenerator<JsonRpcMessage, void, void>;

  constructor(private readonly requestId: JsonRpcId | null) {
    this.messages = this.read();
  }

  get closed(): boolean {
    return this.done;
  }

  push(message: JsonRpcMessage): boolean {
    if (this.done) return false;
    this.items.push(message);
    this.notify();
    return true;
  }

  finish(response: JsonRpcResponse): void {
    if (this.done) return;
    this.items.push(response);
    this.done = true;
    this.notify();
  }

  fail(err: GatewayError): void {
    this.finish(gatewayErrorToWire(err, this.requestId, 'internal').body);
  }

  comment(): void {}

  onClose(callback: () => void): void {
    this.closers.push(callback);
  }

  private notify(): void {
    this.wake?.();
    this.wake = undefined;
  }

  private async *read(): AsyncGenerator<JsonRpcMessage, void, void> {
    try {
      for (;;) {
        while (this.items.length > 0) yield this.items.shift()!;
        if (this.done) return;
        await new Promise<void>((r) => (this.wake = r));
      }
    } finally {
      // Like an HTTP response's 'close': runs whether the call finished or the reader stopped early (for a
      // long-lived call such as a listen, that is its cancellation).
      this.done = true;
      for (const c of this.closers.splice(0)) c();
    }
  }
}
