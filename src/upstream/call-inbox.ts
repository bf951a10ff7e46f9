// The messages one bridged call reads from its legacy upstream: those of its own answer stream, and the
// server requests Gatehouse hands it from the session's GET stream (a request that names no call goes
// there, and belongs to the call in flight: bridge-modern-client.ts), in the order they arrive.

import { GatewayError } from '../errors.js';
import type { JsonRpcMessage, JsonRpcRequest } from '../protocol/jsonrpc.js';

/**
 * A call parked while its client answers the server's question is not read until the client retries (up to
 * sessions.inputTimeoutMs), while the upstream goes on sending: what it sends meanwhile is held, within
 * these bounds. Notifications past the first (progress, log messages: they may be lost) are dropped; more
 * requests and responses than any server asks at once fail the call.
 */
export const MAX_HELD_NOTIFICATIONS = 256;
export const MAX_HELD_OTHERS = 64;

export class CallInbox {
  private readonly items: JsonRpcMessage[] = [];
  /** How many of `items` are notifications (no id). */
  private heldNotifications = 0;
  private dropping = false;
  private wake: (() => void) | undefined;
  private ended = false;
  private failure: { error: unknown } | undefined;
  private firstPut: (() => void) | undefined;
  /** Resolves when the first message is handed in (see put), whether or not the answer stream has come. */
  readonly handedIn = new Promise<void>((resolve) => (this.firstPut = resolve));

  /** `upstream`: named in the failure; `droppingNotifications` is told once, when the first is dropped. */
  constructor(
    private readonly upstream: string,
    private readonly droppingNotifications: () => void,
  ) {}

  /** A message from elsewhere than the answer stream; false when the call reads no more (its stream ended). */
  put(message: JsonRpcMessage): boolean {
    if (this.ended) return false;
    this.hold(message);
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
          this.hold(message);
          this.notify();
        }
      } catch (error) {
        this.failure ??= { error };
      } finally {
        this.ended = true;
        this.notify();
      }
    })();
  }

  async *messages(): AsyncGenerator<JsonRpcMessage, void, void> {
    for (;;) {
      while (this.items.length > 0) {
        const message = this.items.shift()!;
        if (!('id' in message)) this.heldNotifications--;
        yield message;
      }
      if (this.ended) {
        if (this.failure !== undefined) throw this.failure.error;
        return;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** Keeps a message for the reader, within the bounds above. */
  private hold(message: JsonRpcMessage): void {
    if (!('id' in message)) {
      if (this.heldNotifications >= MAX_HELD_NOTIFICATIONS) {
        if (!this.dropping) this.droppingNotifications();
        this.dropping = true;
        return;
      }
      this.heldNotifications++;
    } else if (this.items.length - this.heldNotifications >= MAX_HELD_OTHERS) {
      // Nothing held can be answered in order any more: the call ends with the failure, and the answer
      // stream is let go (follow stops at `ended`).
      this.items.length = 0;
      this.heldNotifications = 0;
      this.failure = { error: new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.upstream}" sent more than ${MAX_HELD_OTHERS} requests or responses while the call waited for its client`, this.upstream) };
      this.ended = true;
      return;
    }
    this.items.push(message);
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
