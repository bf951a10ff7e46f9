// The messages one bridged call reads from its legacy upstream: those of its own answer stream, and the
// server requests Gatehouse hands it from the session's GET stream (a request that names no call goes
// there, and belongs to the call in flight: bridge-modern-client.ts), in the order they arrive.

import type { JsonRpcMessage, JsonRpcRequest } from '../protocol/jsonrpc.js';

export class CallInbox {
  private readonly items: JsonRpcMessage[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private failure: { error: unknown } | undefined;
  private firstPut: (() => void) | undefined;
  /** Resolves when the first message is handed in (see put), whether or not the answer stream has come. */
  readonly handedIn = new Promise<void>((resolve) => (this.firstPut = resolve));

  /** A message from elsewhere than the answer stream; false when the call reads no more (its stream ended). */
  put(message: JsonRpcMessage): boolean {
    if (this.ended) return false;
    this.items.push(message);
    this.firstPut?.();
    this.firstPut = undefined;
    this.notify();
    return true;
  }

  /**
   * Reads the answer stream into the inbox (its end or failure ends the inbox), once it has come. A ping is
   * handed to `ping` as it arrives, not queued: it MUST be answered promptly (basic/utilities/ping.mdx), and
   * the call may be parked, its messages unread until its client retries.
   */
  follow(source: Promise<AsyncGenerator<JsonRpcMessage, void, void>>, ping: (request: JsonRpcRequest) => void): void {
    void (async () => {
      try {
        for await (const message of await source) {
          if (this.ended) return;
          if ('method' in message && message.method === 'ping' && 'id' in message && message.id !== undefined) {
            ping(message as JsonRpcRequest);
            continue;
          }
          this.items.push(message);
          this.notify();
        }
      } catch (error) {
        this.failure = { error };
      } finally {
        this.ended = true;
        this.notify();
      }
    })();
  }

  async *messages(): AsyncGenerator<JsonRpcMessage, void, void> {
    for (;;) {
      while (this.items.length > 0) yield this.items.shift()!;
      if (this.ended) {
        if (this.failure !== undefined) throw this.failure.error;
        return;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
