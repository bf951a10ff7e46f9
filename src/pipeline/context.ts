// The one object a call carries through the pipeline. The edge fills in what the HTTP request says; each
// stage adds what it learns (who is calling, then which tool of which upstream). Stages read it and
// return an Outcome; none of them sees the HTTP request or response.

import type { IncomingHttpHeaders } from 'node:http';
import type { JsonRpcMessage, MessageKind } from '../protocol/jsonrpc.js';
import type { ParamHeader } from '../protocol/param-headers.js';
import type { TraceContext } from '../protocol/trace-context.js';
import type { ClientEra } from '../protocol/versions.js';
import type { Principal } from './principal.js';
import type { Cancellation } from './cancellation.js';

/** Where a tools/call or prompts/get goes, once the catalog has resolved its public name (the resolve stage). */
export interface Route {
  kind: 'tools' | 'prompts';
  /** `upstream/original`: what access rules and policies match. */
  ref: string;
  /** The name the client called. */
  publicName: string;
  /** The upstream's own name for it. */
  original: string;
  upstream: string;
  /**
   * False for a name the upstream's list does not show, passed on as it is because the upstream is served
   * by pass-through (it answers unknown names itself); such a route has no schemas or annotations.
   */
  listed: boolean;
  /** The tool's `x-mcp-header` annotations (tools.mdx §x-mcp-header). */
  params: readonly ParamHeader[];
  annotations?: Record<string, unknown>;
  inputSchema?: unknown;
  outputSchema?: unknown;
  /** The tool's contract as the upstream lists it (name, title, description, schemas, annotations), for pinning. */
  definition?: Record<string, unknown>;
  /** SHA-256 (hex) of the canonical `definition`. */
  definitionSha256?: string;
}

export interface CallContext {
  /** Gatehouse's id for this call: in logs, events, and the `x-gatehouse-call-id` answer header. */
  readonly callId: string;
  /** The edge (gateway) that received the call; event subscribers of one gateway filter on it. */
  readonly edge: object;
  /** `performance.now()` when the request arrived. */
  readonly receivedAt: number;
  readonly httpMethod: 'POST' | 'GET' | 'DELETE';
  /** The client's address (the peer, or X-Forwarded-For behind a trusted proxy), as limits count it. */
  readonly clientAddress: string;
  /** The client's request headers, read-only: adapters forward an allowlist of them. */
  readonly headers: IncomingHttpHeaders;
  /** The client's exact bytes (POST), forwarded untouched when nothing needs rewriting. */
  readonly body?: Buffer;
  /** The message, parsed once by the edge (POST). */
  readonly message?: JsonRpcMessage;
  readonly kind?: MessageKind;
  /** The JSON-RPC method of a request or notification. */
  readonly method?: string;
  readonly era: ClientEra;
  /** The protocol version the client speaks on this request (negotiated legacy version, or 2026-07-28). */
  readonly version: string;
  /** Cancelled when the client goes away before its answer is complete (`cancel.signal` for APIs that take a signal). */
  readonly cancel: Cancellation;
  /** Whether the client takes an SSE answer (its Accept lists text/event-stream). */
  readonly acceptsSse: boolean;
  /** Who is calling (auth stage). */
  readonly principal: Principal;
  /** W3C trace context from the headers or `_meta`; already added to `message._meta`. */
  readonly trace?: TraceContext;
  /**
   * The trace context to send upstream instead of `trace`: set (only while tracing records the call) by the
   * tracing subscriber of the upstream-start event, to its CLIENT span's context. Adapters send
   * `upstreamTrace ?? trace` (protocol/trace-context.ts: `upstreamMessage`, `upstreamBody`).
   */
  upstreamTrace?: TraceContext;
  /**
   * The trace id of the SERVER span tracing records for the call, when the client sent no trace context
   * (`trace` names the trace otherwise): set by the tracing subscriber of the start event, only for a span
   * that records, so the request line leads to a span that exists (log/request-log.ts).
   */
  spanTraceId?: string;
  /** The legacy session the request names, when the edge admitted it. */
  readonly sessionId?: string;
  /**
   * What the client declared it can do, in 2026-07-28 terms: from `_meta` for modern clients, from the
   * session's `initialize` for legacy ones. Lists (and so routes) can depend on it.
   */
  readonly clientCapabilities: Record<string, unknown>;
  /**
   * Set by an edge whose HTTP answer must wait for the access stage's verdict: the 2024-11-05 SSE endpoint,
   * whose POST can carry a step-up's 403 and challenge only if it has not yet been answered 202
   * (edge/sse-endpoint.ts). Called once the access stage hands the call on; a refusal ends the call instead.
   */
  readonly admitted?: () => void;
  /** Set by the resolve stage for tools/call and prompts/get. */
  route?: Route;
  /**
   * Set by the egress stage on a subscriptions/listen it took resource subscriptions out of (URIs whose
   * reach it blocks): the upstream never hears of them, and no update naming one may reach the client.
   */
  readonly withheldUris?: ReadonlySet<string>;
  /** Set by the approval stage when an approval governs the call; its audit record names it. */
  approvalId?: string;
  /**
   * Set when the call is answered without its tool running for it: with a stored answer (the idempotency
   * stage's replay) or with a question for the user (the approval stage's confirmation). Budgets give back
   * what such a call spent.
   */
  heldBack?: 'replay' | 'confirmation';
  /**
   * Set by the budget stage while a spend stands: gives it back, once. For a stage that learns only after
   * its answer has begun (a stream) that the call will not run, as when the user declines a legacy
   * client's confirmation.
   */
  giveBack?: () => Promise<void>;
}
