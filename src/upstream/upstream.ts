// The one interface every upstream transport implements, and the exchange the edge hands it.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../pipeline/principal.js';
import type { TraceContext } from '../protocol/trace-context.js';
import type { JsonRpcMessage, MessageKind } from '../protocol/jsonrpc.js';
import type { ClientEra } from '../protocol/versions.js';
import type { ModernFace } from '../pipeline/ports.js';

/** One client HTTP request on the MCP endpoint, parsed once by the edge. */
export interface McpExchange {
  /** Gatehouse's id for this call; returned to the client in `x-gatehouse-call-id` and used in logs. */
  readonly callId: string;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly httpMethod: 'POST' | 'GET' | 'DELETE';
  /** The exact bytes the client sent (POST only), forwarded untouched when nothing needs rewriting. */
  readonly body?: Buffer;
  readonly message?: JsonRpcMessage;
  readonly kind?: MessageKind;
  readonly era: ClientEra;
  /** The protocol version the client speaks on this request (negotiated legacy version, or 2026-07-28). */
  readonly version: string;
  /** Aborted when the client goes away before its answer is complete. */
  readonly signal: AbortSignal;
  /** Who is calling, as the edge's auth stage resolved it. */
  readonly principal: Principal;
  /** W3C trace context from the request's headers or `_meta`; already added to `message._meta`. */
  readonly trace?: TraceContext;
  /**
   * Binds a legacy session id to this exchange's caller. Whoever issues a session id (the pass-through
   * relaying an upstream's `initialize` answer, or Gatehouse minting one) calls it before the answer
   * leaves; ids never bound are refused at the edge.
   */
  readonly bindSession: (sessionId: string) => void;
  /** Set by whoever refuses the call before any upstream sees it (snake_case code, for metrics and logs). */
  refusal?: string;
}

export interface Upstream {
  readonly name: string;
  readonly transport: 'http' | 'stdio';
  /** Answers the exchange completely (status, headers, body); never throws for upstream failures. */
  handle(exchange: McpExchange): Promise<void>;
  /** True when the upstream can take traffic now (for /readyz). */
  ready(): Promise<boolean>;
  /** Stops child processes and closes pooled connections. */
  close(): Promise<void>;
  /** The upstream as a modern server (era detected first); the catalog aggregates these. */
  modernFace(): Promise<ModernFace>;
  /** The era detected so far, without probing (metrics). */
  knownEra(): 'modern' | 'legacy' | undefined;
}
