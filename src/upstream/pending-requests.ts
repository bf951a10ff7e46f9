// Requests sent on a message channel and waiting for their answer by id: a stdio child (stdio-process.ts) or
// an HTTP+SSE session (sse-channel.ts). Each one times out on its own; one whose caller gives up tells the
// server to stop (2025-11-25/basic/utilities/cancellation.mdx); all fail together when the channel ends.

import { GatewayError } from '../errors.js';
import { onAbort } from '../pipeline/cancellation.js';
import type { JsonRpcId, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from '../protocol/jsonrpc.js';
import type { ToolTimeout } from './tool-timeouts.js';

interface Pending {
  resolve(res: JsonRpcResponse): void;
  reject(err: Error): void;
  cancel(reason: string): void;
  /** Undefined while the clock is stopped (held), or for a request that waits as long as it takes. */
  timer: NodeJS.Timeout | undefined;
  sentAt: number;
  /** This request's time limit: the upstream's, or its tool's (`timeouts.tools`). */
  timeoutMs: number;
}

/**
 * A channel's time limits, read at each request (not copied): a reload may change a stdio upstream's
 * `timeouts` in place, for the children already running too (stdio-sessions.ts retune).
 */
export interface RequestTimeouts {
  readonly requestTimeoutMs: number;
  /** The limits of calls to some tools, in place of `requestTimeoutMs` (`timeouts.tools`). */
  readonly toolTimeout?: ToolTimeout | undefined;
}

export class PendingRequests {
  private readonly pending = new Map<JsonRpcId, Pending>();

  constructor(
    private readonly upstream: string,
    private readonly timeouts: RequestTimeouts,
    /** Seconds from a request sent to its answer (metrics). */
    private readonly observe?: (seconds: number) => void,
  ) {}

  private timeoutOf(request: JsonRpcRequest): number {
    const { requestTimeoutMs, toolTimeout } = this.timeouts;
    if (toolTimeout === undefined || request.method !== 'tools/call') return requestTimeoutMs;
    const name = request.params?.name;
    return (typeof name === 'string' ? toolTimeout(name) : undefined) ?? requestTimeoutMs;
  }

  has(id: JsonRpcId): boolean {
    return this.pending.has(id);
  }

  /**
   * Registers `request` before it is sent; the server is told to stop (`send` of notifications/cancelled)
   * when `signal` aborts or the wait times out first (cancellation.mdx §Behavior Requirements: a request
   * that timed out is cancelled).
   */
  wait(request: JsonRpcRequest, signal: AbortSignal | undefined, send: (msg: JsonRpcMessage) => void, timed = true): Promise<JsonRpcResponse> {
    const id = request.id;
    // initialize is never cancelled (cancellation.mdx §Behavior Requirements).
    const cancel = request.method === 'initialize' ? () => {} : (reason: string) => send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } });
    return new Promise((resolve, reject) => {
      const p: Pending = { resolve, reject, cancel, timer: undefined, sentAt: performance.now(), timeoutMs: this.timeoutOf(request) };
      this.pending.set(id, p);
      if (timed) p.timer = this.clock(id, p);
      const aborted = (): void => {
        if (!this.pending.has(id)) return;
        cancel('client disconnected');
        this.fail(id, new Error('aborted'));
      };
      onAbort(signal, aborted);
    });
  }

  /**
   * Stops the clock of `id`: the server asked its client something (an elicitation, a sampling request),
   * and the request now waits on that client, for as long as the asker allows, not on the server.
   */
  hold(id: JsonRpcId): void {
    const p = this.pending.get(id);
    if (p?.timer === undefined) return;
    clearTimeout(p.timer);
    p.timer = undefined;
  }

  /** Starts the clock of a held request afresh: the client answered, the server works again. */
  resume(id: JsonRpcId): void {
    const p = this.pending.get(id);
    if (p !== undefined && p.timer === undefined) p.timer = this.clock(id, p);
  }

  private clock(id: JsonRpcId, p: Pending): NodeJS.Timeout {
    return setTimeout(() => {
      this.pending.delete(id);
      p.cancel(`no answer within ${p.timeoutMs} ms`);
      p.reject(new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', `Upstream "${this.upstream}" did not answer within ${p.timeoutMs} ms`, this.upstream));
    }, p.timeoutMs);
  }

  /** Whether a request sent before `time` (performance.now()), other than those `skip` names, still waits for its answer. */
  waitingSince(time: number, skip: (id: JsonRpcId) => boolean): boolean {
    for (const [id, p] of this.pending) if (p.sentAt < time && !skip(id)) return true;
    return false;
  }

  /** Hands a response to the request it answers; false when it answers none of them. */
  settle(msg: JsonRpcMessage): boolean {
    if (!('id' in msg) || msg.id === null || 'method' in msg) return false;
    const p = this.pending.get(msg.id as JsonRpcId);
    if (p === undefined) return false;
    if (p.timer !== undefined) clearTimeout(p.timer);
    this.pending.delete(msg.id as JsonRpcId);
    this.observe?.((performance.now() - p.sentAt) / 1000);
    p.resolve(msg as JsonRpcResponse);
    return true;
  }

  fail(id: JsonRpcId, err: Error): void {
    const p = this.pending.get(id);
    if (p === undefined) return;
    if (p.timer !== undefined) clearTimeout(p.timer);
    this.pending.delete(id);
    p.reject(err);
  }

  /**
   * Stops waiting for `id`'s answer without telling the server (its client already did): the request fails
   * with RequestAbandoned, and an answer that comes later settles nothing (isLateAnswer).
   */
  abandon(id: JsonRpcId): void {
    this.fail(id, new RequestAbandoned());
  }

  /** The channel is gone: every request still waiting fails with `err`. */
  failAll(err: () => Error): void {
    for (const id of [...this.pending.keys()]) this.fail(id, err());
  }
}

/** Why a request's wait ended when its client cancelled it (MessageChannel.abandon): no answer is awaited. */
export class RequestAbandoned extends Error {
  constructor() {
    super('cancelled by the client');
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
