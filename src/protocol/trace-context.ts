// W3C Trace Context for MCP requests (2026-07-28/basic/index.mdx §OpenTelemetry trace context): a client
// may send `traceparent`/`tracestate` as HTTP headers or in `params._meta`. Gatehouse carries whichever it
// got to the upstream in both places, so a trace survives the hop whatever the upstream reads, and puts
// the trace id in its own log lines. With tracing on, the upstream gets the context of Gatehouse's CLIENT
// span instead (`ctx.upstreamTrace`, set by the tracing subscriber): `upstreamMessage` and `upstreamBody`
// are what the adapters send.

import type { IncomingHttpHeaders } from 'node:http';

export interface TraceContext {
  traceparent: string;
  tracestate?: string;
  /** The 32-hex trace id, for logs. */
  traceId: string;
}

/**
 * version-traceid-parentid-flags; all-zero ids are invalid (W3C Trace Context §3.2.2). Version `00` is exactly
 * these four fields. A later version may add fields after the flags (§3.2.4 Versioning, §4.3 "if a higher
 * version is detected, the implementation SHOULD try to parse it"): its first 55 characters are read as
 * version 00's, and what follows must begin with a dash. The rest is kept as sent, printable ASCII without
 * spaces only, since it goes on to the upstream as a header value; `ff` is no version at all.
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-[\x21-\x7e]*)?$/;
/** Past this a later version's traceparent is not read (a header, sent on to the upstream). */
const TRACEPARENT_MAX = 512;
/**
 * A tracestate is printable ASCII (keys, values, `,` `=` and optional whitespace, §3.3.1) of at most 512
 * characters (§3.3.1.5): anything else is dropped, never sent on as a header (a line break would fail the
 * upstream request, a long one draws a 431, and either would be counted as the upstream's failure).
 */
const TRACESTATE = /^[\t\x20-\x7e]{0,512}$/;

/** A valid trace context from a traceparent and tracestate (headers or `_meta`), else undefined. */
export function readTraceContext(traceparent: unknown, tracestate: unknown): TraceContext | undefined {
  if (typeof traceparent !== 'string') return undefined;
  const given = traceparent.trim();
  if (given.length > TRACEPARENT_MAX) return undefined;
  const m = TRACEPARENT.exec(given);
  if (!m || m[1] === 'ff' || (m[1] === '00' && m[4] !== undefined) || m[2] === '0'.repeat(32) || m[3] === '0'.repeat(16)) return undefined;
  const state = typeof tracestate === 'string' && TRACESTATE.test(tracestate) ? tracestate : undefined;
  return { traceparent: given, ...(state !== undefined ? { tracestate: state } : {}), traceId: m[2]! };
}

export interface TraceSources {
  /** What the client sent; `_meta` wins when both carry one, since it belongs to this very message. */
  context: TraceContext | undefined;
  /** Where it was missing, so the gateway can add it there. */
  missingFromMeta: boolean;
  missingFromHeaders: boolean;
}

export function traceSources(headers: IncomingHttpHeaders, message: unknown): TraceSources {
  const params = (message as { params?: unknown } | undefined)?.params;
  const meta = typeof params === 'object' && params !== null ? (params as { _meta?: unknown })._meta : undefined;
  const metaObj = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>) : undefined;
  const fromMeta = readTraceContext(metaObj?.traceparent, metaObj?.tracestate);
  const fromHeaders = readTraceContext(headers.traceparent, headers.tracestate);
  return { context: fromMeta ?? fromHeaders, missingFromMeta: fromMeta === undefined, missingFromHeaders: fromHeaders === undefined };
}

/** Adds the trace context to a request's `_meta` (in place: the edge's parsed copy, never the client's bytes). */
export function putTraceInMeta(message: { params?: Record<string, unknown> }, trace: TraceContext): void {
  const params = (message.params ??= {});
  const meta = (typeof params._meta === 'object' && params._meta !== null ? params._meta : (params._meta = {})) as Record<string, unknown>;
  meta.traceparent = trace.traceparent;
  if (trace.tracestate !== undefined) meta.tracestate = trace.tracestate;
}

/** What the upstream adapters read of a call to send its trace context (a CallContext). */
export interface UpstreamTraced {
  readonly message?: unknown;
  readonly kind?: string;
  readonly body?: Buffer;
  readonly trace?: TraceContext;
  readonly upstreamTrace?: TraceContext;
}

/**
 * The message to send upstream: the call's own, or, when Gatehouse records a CLIENT span for the upstream
 * request (`upstreamTrace`), a copy of a request whose `params._meta` carries that span's context instead
 * of the client's. Without one, the very same object (no copy).
 */
export function upstreamMessage<M>(ctx: UpstreamTraced & { readonly message?: M }): M {
  const trace = ctx.upstreamTrace;
  const message = ctx.message as M;
  if (trace === undefined || ctx.kind !== 'request' || typeof message !== 'object' || message === null) return message;
  const request = message as { params?: Record<string, unknown> };
  const params = request.params ?? {};
  // A copy down to `_meta`, so the client's parsed message stays as it came; the client's tracestate does not
  // belong to the CLIENT span.
  const { tracestate: _clientState, ...meta } = typeof params._meta === 'object' && params._meta !== null ? (params._meta as Record<string, unknown>) : {};
  const copy = { ...request, params: { ...params, _meta: meta } };
  putTraceInMeta(copy, trace);
  return copy as M;
}

/**
 * The bytes to send upstream on the pass-through: the client's (or the edge's), unchanged, unless a CLIENT
 * span's context must replace the one in a request's `_meta`.
 */
export function upstreamBody(ctx: UpstreamTraced): Buffer | undefined {
  if (ctx.upstreamTrace === undefined || ctx.kind !== 'request' || ctx.message === undefined) return ctx.body;
  return Buffer.from(JSON.stringify(upstreamMessage(ctx)));
}
