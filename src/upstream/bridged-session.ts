// One legacy client session that Gatehouse holds in front of a modern upstream: what the client declared
// at initialize, its log level, its requests in flight (for notifications/cancelled), the server-to-client
// requests awaiting its answers, and its GET stream.

import type { Principal } from '../pipeline/principal.js';
import type { SseWriter } from '../edge/sse-writer.js';
import { openListenStream } from '../edge/listen-stream.js';
import { ErrorCode, type JsonRpcId, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import type { EndReason, HeldSession } from './session-table.js';
import type { McpExchange } from './upstream.js';


interface Waiting {
  resolve(res: JsonRpcResponse): void;
  timer: NodeJS.Timeout;
}

export class BridgedSession implements HeldSession {
  lastUsed = Date.now();
  logLevel?: string;
  /** Resource URIs the client subscribed to with resources/subscribe. */
  readonly uris = new Set<string>();
  /** The upstream subscriptions/listen that feeds the GET stream, while one is open. */
  upstreamListen?: AbortController;
  private readonly inFlight = new Map<JsonRpcId, AbortController>();
  private readonly waiting = new Map<JsonRpcId, Waiting>();
  private listen?: SseWriter;

  constructor(
    readonly id: string,
    readonly version: string,
    readonly capabilities: Record<string, unknown>,
    readonly clientInfo: unknown,
    /** Who opened the session; background traffic on its behalf (the GET stream's listen) is theirs. */
    readonly principal?: Principal,
  ) {}

  isIdle(): boolean {
    return this.inFlight.size === 0 && this.waiting.size === 0 && this.listen === undefined;
  }

  /** Registers a client request in flight; its signal aborts on notifications/cancelled or session end. */
  track(clientId: JsonRpcId): { signal: AbortSignal; release(): void } {
    const controller = new AbortController();
    this.inFlight.set(clientId, controller);
    return {
      signal: controller.signal,
      release: () => {
        if (this.inFlight.get(clientId) === controller) this.inFlight.delete(clientId);
        this.lastUsed = Date.now();
      },
    };
  }

  /** 2025-11-25/basic/utilities/cancellation.mdx: stop work on the request, send nothing more for it. */
  cancel(clientId: JsonRpcId | undefined): void {
    if (clientId === undefined) return;
    this.inFlight.get(clientId)?.abort();
  }

  /** Resolves with the client's answer to a server-to-client request, or an error on timeout or abort. */
  awaitServerRequest(id: JsonRpcId, timeoutMs: number, signal: AbortSignal): Promise<JsonRpcResponse> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.settleServerRequest({ jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message: 'the client did not answer in time' } }), timeoutMs);
      this.waiting.set(id, { resolve, timer });
      signal.addEventListener('abort', () => this.settleServerRequest({ jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message: 'cancelled' } }), { once: true });
    });
  }

  settleServerRequest(response: JsonRpcResponse): void {
    if (response.id === null) return;
    const w = this.waiting.get(response.id);
    if (!w) return;
    clearTimeout(w.timer);
    this.waiting.delete(response.id);
    w.resolve(response);
  }

  get listening(): boolean {
    return this.listen !== undefined;
  }

  /** Sends a notification on the GET stream, if the client has one open. */
  notify(message: unknown): void {
    this.listen?.send(message);
  }

  openListenStream(ex: McpExchange): boolean {
    this.closeListenStream();
    const writer = openListenStream(ex, this.id, (w) => {
      if (this.listen === w) this.closeListenStream();
    });
    this.listen = writer;
    return writer !== undefined;
  }


  async close(_reason: EndReason): Promise<void> {
    for (const c of this.inFlight.values()) c.abort();
    for (const id of [...this.waiting.keys()]) this.settleServerRequest({ jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message: 'session ended' } });
    this.closeListenStream();
  }

  private closeListenStream(): void {
    this.upstreamListen?.abort();
    this.upstreamListen = undefined;
    this.listen?.end();
    this.listen = undefined;
  }
}
