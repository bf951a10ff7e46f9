// Requests sent on a message channel and waiting for their answer by id: a stdio child (stdio-process.ts) or
// an HTTP+SSE session (sse-channel.ts). Each one times out on its own; one whose caller gives up tells the
// server to stop (2025-11-25/basic/utilities/cancellation.mdx); all fail together when the channel ends.

import { GatewayError } from '../errors.js';
import type { JsonRpcId, JsonRpcMessage, JsonRpcResponse } from '../protocol/jsonrpc.js';

interface Pending {
  resolve(res: JsonRpcResponse): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
  sentAt: number;
}

export class PendingRequests {
  private readonly pending = new Map<JsonRpcId, Pending>();

  constructor(
    private readonly upstream: string,
    private readonly timeoutMs: number,
    /** Seconds from a request sent to its answer (metrics). */
    private readonly observe?: (seconds: number) => void,
  ) {}

  has(id: JsonRpcId): boolean {
    return this.pending.has(id);
  }

  /**
   * Registers `id` before it is sent; `cancel` tells the server to stop when `signal` aborts or the wait
   * times out first (cancellation.mdx §Behavior Requirements: a request that timed out is cancelled).
   */
  wait(id: JsonRpcId, signal: AbortSignal | undefined, cancel: (reason: string) => void): Promise<JsonRpcResponse> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        cancel(`no answer within ${this.timeoutMs} ms`);
        reject(new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', `Upstream "${this.upstream}" did not answer within ${this.timeoutMs} ms`, this.upstream));
      }, this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer, sentAt: performance.now() });
      signal?.addEventListener('abort', () => {
        if (!this.pending.has(id)) return;
        cancel('client disconnected');
        this.fail(id, new Error('aborted'));
      }, { once: true });
    });
  }

  /** Hands a response to the request it answers; false when it answers none of them. */
  settle(msg: JsonRpcMessage): boolean {
    if (!('id' in msg) || msg.id === null || 'method' in msg) return false;
    const p = this.pending.get(msg.id as JsonRpcId);
    if (p === undefined) return false;
    clearTimeout(p.timer);
    this.pending.delete(msg.id as JsonRpcId);
    this.observe?.((performance.now() - p.sentAt) / 1000);
    p.resolve(msg as JsonRpcResponse);
    return true;
  }

  fail(id: JsonRpcId, err: Error): void {
    const p = this.pending.get(id);
    if (p === undefined) return;
    clearTimeout(p.timer);
    this.pending.delete(id);
    p.reject(err);
  }

  /** The channel is gone: every request still waiting fails with `err`. */
  failAll(err: () => Error): void {
    for (const id of [...this.pending.keys()]) this.fail(id, err());
  }
}

/**
 * A response that settled no waiting request: the answer to one that timed out or was cancelled. It is
 * dropped (cancellation.mdx §Timing Considerations: a sender SHOULD ignore it), never handed to whatever
 * call happens to be in flight, which would then take another request's answer for its own.
 */
export function isLateAnswer(msg: JsonRpcMessage): boolean {
  return 'id' in msg && !('method' in msg);
}
