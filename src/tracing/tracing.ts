// OpenTelemetry traces (issue 18): one SERVER span per MCP request, exported in batches over OTLP/HTTP.
// Like metrics and the audit, tracing subscribes to the pipeline's `diagnostics_channel` events (start,
// refused, upstream-start, upstream, wait, end); no stage knows about it. The OpenTelemetry packages are imported only
// when `tracing.enabled` is true, so a gateway that does not trace never loads them.
//
// Attribute names follow the OpenTelemetry semantic conventions for MCP (gen-ai/mcp.md, status
// Development): span name `{mcp.method.name} {target}`, `mcp.method.name`, `mcp.session.id`,
// `mcp.protocol.version`, `jsonrpc.request.id`, `gen_ai.tool.name`, `gen_ai.prompt.name`,
// `gen_ai.operation.name`, `rpc.response.status_code` (the JSON-RPC error code, as a string), `error.type`;
// plus `rpc.jsonrpc.error_code` (the older RPC convention, as a number) and Gatehouse's own `gatehouse.*`.
//
// Each stage's decision is a span event (a pass, or its refusal). The upstream request is a CLIENT span, child of the SERVER span,
// started when the call enters the upstream stage (a synchronous event): its context is what the upstream
// receives, in headers and in `_meta` (the subscriber sets `ctx.upstreamTrace`, which the adapters send).
// A stage's wait on the store or the network (rate limit, budget, breaker, idempotency, approval, pin,
// egress DNS, the audit append) is an INTERNAL child span, from the pipeline's wait events.
// A call whose SERVER span is not sampled records nothing more, and the upstream then gets the client's own
// trace context, byte for byte, as with tracing off.
//
// Bounded cost: the BatchSpanProcessor holds at most `MAX_QUEUE` finished spans and drops the rest, the
// exporter sends at most a few requests at a time with a timeout, and nothing a call waits for touches the
// network; a collector that is down costs at most the queue. A failed export, and a span dropped because the
// queue is full, are counted (metrics) and logged, at most once a minute each, so an operator learns that spans are being lost. A span holds at most NAME_MAX characters of
// name and ATTRIBUTE_MAX per string attribute, whatever the client sent.
//
// The strings a client chose (method, tool and prompt names, the JSON-RPC id, the subject) are scrubbed as
// the log's lines are, of credential-shaped text and of the configured secret values (span-text.ts): a span
// is sent to a backend that more people read than the gateway's log.

import { createHash } from 'node:crypto';
import type * as Api from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../log/logger.js';
import { channels, subscribe, type CallEndEvent, type CallRefusedEvent, type CallStartEvent, type RefusedRequest, type StagePassedEvent, type StageWaitEvent, type UpstreamAnswerEvent, type UpstreamStartEvent } from '../pipeline/events.js';
import type { CallContext } from '../pipeline/context.js';
import { KNOWN_CLIENT_METHODS } from '../protocol/methods.js';
import type { TraceContext } from '../protocol/trace-context.js';
import { watchQueue } from './queue-watch.js';
import { SpanTexts } from './span-text.js';

export interface TracingSettings {
  enabled: boolean;
  endpoint?: string;
  sampleRatio: number;
  headers?: Record<string, string>;
  resourceAttributes?: Record<string, string>;
  /**
   * How long one export may take before it is abandoned, and how long stopping waits for the last one;
   * EXPORT_TIMEOUT_MS unless set. Not a config key: code sets it (tests of a collector that holds an export
   * open make it longer than their own wait, so a call that waited on an export could not be answered).
   */
  exportTimeoutMs?: number;
}

/** What the metrics count of spans lost: in an export that failed, or dropped before one for want of room. */
export type SpansLost = (spans: number, reason: 'export_failed' | 'queue_full') => void;

export interface CallTracing {
  /** Resolves once the OpenTelemetry packages are loaded and spans are recorded (never rejects). */
  readonly ready: Promise<void>;
  /** Stops listening and flushes what is queued, waiting at most the export timeout. */
  stop(): Promise<void>;
}

const MAX_QUEUE = 2048;
const MAX_BATCH = 512;
const EXPORT_TIMEOUT_MS = 5000;
const SCHEDULED_DELAY_MS = 1000;
/** At most one warning per this interval about failed exports: a collector that is down fails every batch. */
const EXPORT_WARN_INTERVAL_MS = 60_000;
/**
 * The longest span name and string attribute kept (as the request log's fields, log/request-log.ts): the
 * tool name and the JSON-RPC id are the client's, and a megabyte of either would be held by every span in
 * the queue and make a batch the collector refuses.
 */
const NAME_MAX = 200;
const ATTRIBUTE_MAX = 256;

/** The traces URL: the config, else the standard OTLP environment variables, else the OTLP/HTTP default. */
export function tracesEndpoint(settings: Pick<TracingSettings, 'endpoint'>, env: NodeJS.ProcessEnv): string {
  if (settings.endpoint !== undefined) return settings.endpoint;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (base) return `${base.replace(/\/+$/, '')}/v1/traces`;
  return 'http://localhost:4318/v1/traces';
}

/** The span of one call, with what the events before `end` learnt. */
interface Open {
  span: Api.Span;
  rpcCode?: number;
  /** The CLIENT span of the upstream request, while it is open. */
  client?: Api.Span;
  /** `performance.now()` when the adapter answered with a whole answer (json, refused): the client span ends there. */
  clientAnsweredAt?: number;
}

/** Starts tracing the calls answered on `edge`; the packages load in the background (`ready`). */
export function traceCalls(edge: object, settings: TracingSettings, log: Logger, env: NodeJS.ProcessEnv = process.env, spansLost?: SpansLost): CallTracing {
  let stopped = false;
  let stopListening: (() => void) | undefined;
  let shutdown: (() => Promise<void>) | undefined;
  const exportTimeoutMs = settings.exportTimeoutMs ?? EXPORT_TIMEOUT_MS;
  const ready = start().catch((err: unknown) => log.error('tracing could not start; calls are served without spans', { err }));

  async function start(): Promise<void> {
    const [api, base, otlp, resources] = await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
    if (stopped) return;
    const url = tracesEndpoint(settings, env);
    const otlpExporter = new otlp.OTLPTraceExporter({ url, timeoutMillis: exportTimeoutMs, concurrencyLimit: 4, ...(settings.headers !== undefined ? { headers: settings.headers } : {}) });
    const queue = watchQueue(MAX_QUEUE, queueFullReporter(log, spansLost));
    const exporter = queue.exporter(watchedExporter(otlpExporter, exportFailureReporter(url, log, spansLost)));
    const provider = new base.BasicTracerProvider({
      resource: resources.resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME?.trim() || 'gatehouse', ...settings.resourceAttributes }),
      sampler: new base.ParentBasedSampler({ root: new base.TraceIdRatioBasedSampler(settings.sampleRatio) }),
      spanLimits: { attributeValueLengthLimit: ATTRIBUTE_MAX },
      spanProcessors: [queue.processor, new base.BatchSpanProcessor(exporter, { maxQueueSize: MAX_QUEUE, maxExportBatchSize: MAX_BATCH, scheduledDelayMillis: SCHEDULED_DELAY_MS, exportTimeoutMillis: exportTimeoutMs })],
    });
    // Not registered globally: this gateway's spans only, so two gateways in one process never mix.
    const tracer = provider.getTracer('gatehouse');
    const open = new Map<string, Open>();
    // Scrubbed with this gateway's logger: its configured secrets, and those a reload adds.
    const texts = new SpanTexts(log, ATTRIBUTE_MAX);
    const clientText = (value: unknown): string => texts.text(value);

    /** `sampled`: the parent's sampled flag as Gatehouse takes it; the client's own when undefined. */
    const parentOf = (trace: TraceContext | undefined, sampled?: boolean): Api.Context => {
      if (!trace) return api.ROOT_CONTEXT;
      const [, traceId, spanId, flags] = trace.traceparent.split('-');
      return api.trace.setSpanContext(api.ROOT_CONTEXT, {
        traceId: traceId!,
        spanId: spanId!,
        traceFlags: sampled === undefined ? parseInt(flags!, 16) & 1 : sampled ? 1 : 0,
        isRemote: true,
        ...(trace.tracestate !== undefined ? { traceState: api.createTraceState(trace.tracestate) } : {}),
      });
    };

    const onStart = (e: CallStartEvent): void => {
      if (e.edge !== edge) return;
      const ctx = e.ctx;
      // The samplers (ParentBased, TraceIdRatioBased) decide on the trace id alone: the attributes are built
      // only for a span that records, so an unsampled call costs little more than its span object. Named
      // after the method until the call ends: whether its tool is one a list gave (listedTarget) is known
      // only once the resolve stage has run.
      const span = tracer.startSpan(spanName(texts, ctx.method ?? ctx.httpMethod, undefined), { kind: api.SpanKind.SERVER, startTime: hr(ctx.receivedAt) }, parentOf(ctx.trace));
      if (span.isRecording()) {
        // A trace Gatehouse started itself: the request line names it (the client's, in ctx.trace, otherwise).
        if (ctx.trace === undefined) ctx.spanTraceId = span.spanContext().traceId;
        span.setAttributes(startAttributes(texts, ctx));
        span.addEvent('gatehouse.stage', { 'gatehouse.stage': 'auth', 'gatehouse.decision': 'pass' });
      }
      open.set(e.callId, { span });
    };
    // Each stage's decision is an event on the call's span: auth passed (the call started), then every
    // stage that handed the call on; a refusal is its own event below.
    const onPassed = (e: StagePassedEvent): void => {
      if (e.edge !== edge) return;
      const entry = open.get(e.callId);
      if (entry?.span.isRecording()) entry.span.addEvent('gatehouse.stage', { 'gatehouse.stage': e.stage, 'gatehouse.decision': 'pass' });
    };
    const onRefused = (e: CallRefusedEvent): void => {
      if (e.edge !== edge) return;
      let entry = open.get(e.callId);
      // Refused before the call could be described (front door, auth): its span starts here, in the
      // client's trace, so the request line written at its end can name that span's trace.
      if (!entry && e.request !== undefined) entry = startRefused(e.callId, e.request);
      if (!entry || !entry.span.isRecording()) return;
      const rpcCode = (e.refusal as { rpcCode?: unknown }).rpcCode;
      if (typeof rpcCode === 'number') entry.rpcCode = rpcCode;
      entry.span.addEvent('gatehouse.refusal', { 'gatehouse.stage': e.stage, 'gatehouse.refusal_code': e.code, ...(e.rule !== undefined ? { 'gatehouse.rule': e.rule } : {}) });
    };
    /** The SERVER span of a request the edge refused before its call existed; named once it ends (its method may be read after the refusal). */
    // A request refused before it was authenticated joins the client's trace, but is recorded only when
    // `sampleRatio` picks that trace: a client's sampled flag is followed from callers Gatehouse knows, and
    // believed from anyone, every request of a flood of refused ones would be recorded and exported, past
    // the share the operator set.
    const refusalSampler = new base.TraceIdRatioBasedSampler(settings.sampleRatio);
    const ratioPicks = (traceId: string): boolean => refusalSampler.shouldSample(api.ROOT_CONTEXT, traceId).decision === base.SamplingDecision.RECORD_AND_SAMPLED;
    const startRefused = (callId: string, request: RefusedRequest): Open => {
      const parent = request.trace === undefined ? api.ROOT_CONTEXT : parentOf(request.trace, ratioPicks(request.trace.traceId));
      const span = tracer.startSpan('other', { kind: api.SpanKind.SERVER, startTime: hr(request.receivedAt) }, parent);
      // A trace Gatehouse started itself: the request line names it (the client's, in request.trace, otherwise).
      if (request.trace === undefined && span.isRecording()) request.spanTraceId = span.spanContext().traceId;
      const entry: Open = { span };
      open.set(callId, entry);
      return entry;
    };
    // The upstream request, as a CLIENT span: from the call entering the upstream stage until its answer is
    // whole (a json answer or a refusal: when the adapter answered; a relay or a stream: when the call ends).
    // The adapters send its context upstream (`ctx.upstreamTrace`), in headers and in `_meta`.
    const onUpstreamStart = (e: UpstreamStartEvent): void => {
      if (e.edge !== edge) return;
      const entry = open.get(e.callId);
      if (!entry || !entry.span.isRecording() || entry.client) return;
      const ctx = e.ctx;
      const rawTarget = ctx.route?.original ?? targetOf(ctx);
      const target = rawTarget !== undefined ? clientText(rawTarget) : undefined;
      const client = tracer.startSpan(
        spanName(texts, ctx.method ?? ctx.httpMethod, listedTarget(ctx) !== undefined ? target : undefined),
        {
          kind: api.SpanKind.CLIENT,
          startTime: hr(performance.now()),
          attributes: {
            ...(ctx.method !== undefined ? { 'mcp.method.name': clientText(ctx.method) } : {}),
            ...(ctx.method === 'tools/call' && target !== undefined ? { 'gen_ai.tool.name': target, 'gen_ai.operation.name': 'execute_tool' } : {}),
            ...(ctx.method === 'prompts/get' && target !== undefined ? { 'gen_ai.prompt.name': target } : {}),
            'gatehouse.upstream': e.upstream,
          },
        },
        api.trace.setSpan(api.ROOT_CONTEXT, entry.span),
      );
      entry.client = client;
      const sc = client.spanContext();
      const tracestate = sc.traceState?.serialize();
      ctx.upstreamTrace = { traceparent: `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 1).toString(16).padStart(2, '0')}`, ...(tracestate ? { tracestate } : {}), traceId: sc.traceId };
    };
    const onUpstream = (e: UpstreamAnswerEvent): void => {
      if (e.edge !== edge) return;
      const entry = open.get(e.callId);
      if (!entry?.client) return;
      entry.client.setAttribute('gatehouse.upstream.answer_kind', e.kind);
      if (e.kind !== 'relay' && e.kind !== 'stream') entry.clientAnsweredAt = performance.now();
    };
    // A stage's wait on the store or the network, as an INTERNAL child span of the call's.
    const onWait = (e: StageWaitEvent): void => {
      if (e.edge !== edge) return;
      const entry = open.get(e.callId);
      if (!entry || !entry.span.isRecording()) return;
      const now = e.endedAt ?? performance.now();
      const span = tracer.startSpan(
        `${e.stage} ${e.wait}`,
        { kind: api.SpanKind.INTERNAL, startTime: hr(now - e.seconds * 1000), attributes: { 'gatehouse.stage': e.stage, 'gatehouse.wait': e.wait, ...(e.error !== undefined ? { 'error.type': e.error } : {}) } },
        api.trace.setSpan(api.ROOT_CONTEXT, entry.span),
      );
      if (e.error !== undefined) span.setStatus({ code: api.SpanStatusCode.ERROR, message: e.error });
      span.end(hr(now));
    };
    const onEnd = (e: CallEndEvent): void => {
      if (e.edge !== edge) return;
      let entry = open.get(e.callId);
      open.delete(e.callId);
      if (!entry) {
        // Ended before the call could be described, and not refused by the edge (a /health answer, a client
        // gone before auth): a span of its own, with no parent. (A request the edge refused has one from its refusal.)
        const name = spanName(texts, e.method ?? e.httpMethod, e.ctx !== undefined ? listedTarget(e.ctx) : undefined);
        const span = tracer.startSpan(name, { kind: api.SpanKind.SERVER, startTime: hr(performance.now() - e.seconds * 1000), attributes: e.method !== undefined ? { 'mcp.method.name': clientText(e.method) } : {} }, api.ROOT_CONTEXT);
        if (e.refusal !== undefined) span.addEvent('gatehouse.refusal', { 'gatehouse.stage': e.stage ?? 'edge', 'gatehouse.refusal_code': e.refusal });
        entry = { span };
      } else if (e.request !== undefined && entry.span.isRecording()) {
        // Its span began at the refusal (startRefused), before its JSON-RPC method could be known.
        entry.span.updateName(spanName(texts, e.method ?? e.httpMethod, undefined));
        if (e.method !== undefined) entry.span.setAttribute('mcp.method.name', clientText(e.method));
      }
      // The answer's error code, as the edge read it: never from the answer event, whose subscribers make
      // every governed answer wait and be parsed (the audit's price, not tracing's).
      if (e.rpcCode !== undefined) entry.rpcCode = e.rpcCode;
      if (entry.client) endClient(entry, e);
      const span = entry.span;
      if (!span.isRecording()) return span.end();
      const endTime = hr(performance.now());
      const target = e.ctx !== undefined ? listedTarget(e.ctx) : undefined;
      if (target !== undefined) span.updateName(spanName(texts, e.ctx!.method!, target));
      const subject = e.ctx?.principal.subject ?? e.subject;
      const tenant = e.ctx?.principal.tenant;
      const route = e.ctx?.route;
      span.setAttributes({
        'gatehouse.call_id': e.callId,
        'gatehouse.outcome': e.outcome,
        'http.response.status_code': e.status,
        ...(e.era !== undefined ? { 'gatehouse.era': e.era } : {}),
        // A request Gatehouse made itself for a client's connection (the HTTP+SSE endpoint's listen GET and closing DELETE).
        ...(e.internal === true ? { 'gatehouse.internal': true } : {}),
        ...(subject !== undefined ? { 'enduser.id': clientText(subject) } : {}),
        ...(tenant !== undefined ? { 'gatehouse.tenant': clientText(tenant) } : {}),
        ...(route !== undefined ? { 'gatehouse.tool_ref': clientText(route.ref), 'gatehouse.upstream': route.upstream } : e.upstream !== undefined ? { 'gatehouse.upstream': e.upstream } : {}),
        ...(e.tool !== undefined ? { 'gen_ai.tool.name': clientText(e.tool), 'gen_ai.operation.name': 'execute_tool' } : {}),
        ...(e.prompt !== undefined ? { 'gen_ai.prompt.name': clientText(e.prompt) } : {}),
        ...(e.refusal !== undefined ? { 'gatehouse.refusal_code': e.refusal, 'gatehouse.refusal_stage': e.stage ?? 'edge', ...(e.rule !== undefined ? { 'gatehouse.rule': e.rule } : {}) } : {}),
        ...(entry.rpcCode !== undefined ? { 'rpc.response.status_code': String(entry.rpcCode), 'rpc.jsonrpc.error_code': entry.rpcCode } : {}),
        ...(e.ctx?.approvalId !== undefined ? { 'gatehouse.approval_id': e.ctx.approvalId } : {}),
      });
      // A JSON-RPC error answer is an error span even when its HTTP status is 200 (the RPC conventions).
      if (e.outcome !== 'ok' || entry.rpcCode !== undefined) {
        const errorType = errorTypeOf(entry, e);
        span.setAttribute('error.type', errorType);
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: errorType });
      }
      span.end(endTime);
    };

    /** Ends the CLIENT span with the call: an error when the upstream failed or the call was refused there. */
    const endClient = (entry: Open, e: CallEndEvent): void => {
      const client = entry.client!;
      const failed = e.outcome === 'upstream_error' || (e.refusal !== undefined && e.stage === 'upstream');
      if (failed) {
        const errorType = errorTypeOf(entry, e);
        client.setAttribute('error.type', errorType);
        client.setStatus({ code: api.SpanStatusCode.ERROR, message: errorType });
      }
      client.end(hr(entry.clientAnsweredAt ?? performance.now()));
    };

    const stops = [
      subscribe<CallStartEvent>(channels.start, onStart),
      subscribe<CallRefusedEvent>(channels.refused, onRefused),
      subscribe<UpstreamStartEvent>(channels.upstreamStart, onUpstreamStart),
      subscribe<UpstreamAnswerEvent>(channels.upstream, onUpstream),
      subscribe<StageWaitEvent>(channels.wait, onWait),
      subscribe<StagePassedEvent>(channels.passed, onPassed),
      subscribe<CallEndEvent>(channels.end, onEnd),
    ];
    stopListening = () => {
      for (const stop of stops) stop();
      // Calls still open when the gateway stops: end them, so they are exported with the rest.
      for (const { span, client } of open.values()) {
        const now = hr(performance.now());
        client?.end(now);
        span.end(now);
      }
      open.clear();
    };
    shutdown = () => provider.shutdown();
    log.info('tracing on', { endpoint: printableEndpoint(url), sampleRatio: settings.sampleRatio });
  }

  return {
    ready,
    async stop() {
      stopped = true;
      await ready;
      stopListening?.();
      if (!shutdown) return;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, exportTimeoutMs + 500);
        timer.unref();
      });
      await Promise.race([shutdown().catch((err: unknown) => log.warn('tracing: the last spans could not be exported', { err })), timeout]);
      clearTimeout(timer);
    },
  };
}

/**
 * The exporter, with its failures reported: the BatchSpanProcessor hands a failed export's error to
 * OpenTelemetry's global error handler, which writes to the diag logger, a no-op unless one is set, so a
 * collector that is down, refuses or times out would lose every span without a word.
 */
function watchedExporter(inner: SpanExporter, failed: (spans: number, err: Error | undefined) => void): SpanExporter {
  return {
    export(spans, done) {
      inner.export(spans, (result) => {
        // ExportResultCode.SUCCESS is 0 (@opentelemetry/core, not a dependency of its own).
        if (result.code !== 0) failed(spans.length, result.error);
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * Counts each failed export (`count`: the metrics, when on) and warns at most once per
 * EXPORT_WARN_INTERVAL_MS, with what failed since the last warning. The endpoint is named by origin and
 * path only (its userinfo and query may hold the backend's credentials), and the headers never.
 */
function exportFailureReporter(url: string, log: Logger, count: SpansLost | undefined): (spans: number, err: Error | undefined) => void {
  const endpoint = printableEndpoint(url);
  const warningDue = warnGate();
  let failures = 0;
  let spansLost = 0;
  return (spans, err) => {
    count?.(spans, 'export_failed');
    failures++;
    spansLost += spans;
    if (!warningDue()) return;
    // The error's message only (a status text or a network error): an OTLP error also holds the response body.
    const reason = err === undefined ? 'unknown' : err.message.split(url).join(endpoint);
    const status = (err as { code?: unknown } | undefined)?.code;
    log.warn('tracing: spans could not be exported and were dropped', { endpoint, failedExports: failures, droppedSpans: spansLost, reason, ...(typeof status === 'number' ? { status } : {}) });
    failures = 0;
    spansLost = 0;
  };
}

/** True at most once per EXPORT_WARN_INTERVAL_MS: a collector that is down or slow fails every batch. */
function warnGate(): () => boolean {
  let warnedAt: number | undefined;
  return () => {
    const now = performance.now();
    if (warnedAt !== undefined && now - warnedAt < EXPORT_WARN_INTERVAL_MS) return false;
    warnedAt = now;
    return true;
  };
}

/**
 * Counts each span dropped because the export queue is full (a collector slower than the calls) and warns
 * at most once per EXPORT_WARN_INTERVAL_MS with how many were dropped since the last warning.
 */
function queueFullReporter(log: Logger, spansLost: SpansLost | undefined): (spans: number) => void {
  const warningDue = warnGate();
  let dropped = 0;
  return (spans) => {
    spansLost?.(spans, 'queue_full');
    dropped += spans;
    if (!warningDue()) return;
    log.warn('tracing: spans were dropped because the export queue is full (the collector is slower than the calls)', { droppedSpans: dropped, queueSize: MAX_QUEUE });
    dropped = 0;
  };
}

/**
 * A `performance.now()` reading as an OpenTelemetry HrTime, on one clock for every span: the SDK would mix
 * `Date.now()` (millisecond steps) for some ends with `performance.now()` for others, so a child span could
 * seem to end after its parent.
 */
function hr(perf: number): Api.HrTime {
  const ms = performance.timeOrigin + perf;
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6));
  return [seconds, nanos];
}

/** `error.type` of a call that did not end well: its refusal code, else its JSON-RPC error code, else its outcome word. */
function errorTypeOf(entry: { rpcCode?: number }, e: CallEndEvent): string {
  return e.refusal ?? (entry.rpcCode !== undefined ? String(entry.rpcCode) : e.outcome);
}

/**
 * `{method} {target}`, or the method alone. A method Gatehouse does not know by name is `other` here (as
 * in the metrics): the client chooses it, and a span name is what a backend indexes (see listedTarget);
 * `mcp.method.name` still carries it.
 */
function spanName(texts: SpanTexts, method: string, target: string | undefined): string {
  const known = KNOWN_CLIENT_METHODS.has(method) || HTTP_METHODS.has(method) ? method : 'other';
  return texts.text(target !== undefined ? `${known} ${target}` : known, NAME_MAX);
}

/** A request's HTTP method names the span of a request without a JSON-RPC method (a GET, a DELETE, one refused before its body was read). */
const HTTP_METHODS: ReadonlySet<string> = new Set(['GET', 'POST', 'DELETE', 'HEAD', 'OPTIONS', 'PUT', 'PATCH']);

/**
 * The target of a span's name (semantic conventions for MCP, §Spans: `{mcp.method.name} {target}`, and the
 * method alone when no low-cardinality target is available): the tool or prompt name the client called,
 * when a list gave it. A name no list gave is the client's choice (a pass-through upstream is sent it, a
 * catalog refuses it), as many as it likes: it stays an attribute (gen_ai.tool.name) and never becomes a
 * span name, which backends index (as the metrics count it `other`). The route of a pass-through call the
 * upstream's list did not show is `listed: false`; a call refused before the resolve stage has none.
 */
function listedTarget(ctx: CallContext): string | undefined {
  if (ctx.method !== 'tools/call' && ctx.method !== 'prompts/get') return undefined;
  const route = ctx.route;
  return route !== undefined && route.listed ? route.publicName : undefined;
}

/** The tool or prompt name the client used, whether or not a list gave it. */
function targetOf(ctx: CallContext): string | undefined {
  if (ctx.method !== 'tools/call' && ctx.method !== 'prompts/get') return undefined;
  const name = (ctx.message as { params?: { name?: unknown } } | undefined)?.params?.name;
  return typeof name === 'string' ? name : undefined;
}

function startAttributes(texts: SpanTexts, ctx: CallContext): Api.Attributes {
  const id = ctx.kind === 'request' ? (ctx.message as { id?: unknown } | undefined)?.id : undefined;
  return {
    ...(ctx.method !== undefined ? { 'mcp.method.name': texts.text(ctx.method) } : {}),
    'mcp.protocol.version': ctx.version,
    // A digest, not the id: a legacy session id is what a client presents to be served in that session.
    ...(ctx.sessionId !== undefined ? { 'mcp.session.id': createHash('sha256').update(ctx.sessionId).digest('hex').slice(0, 32) } : {}),
    ...(typeof id === 'string' || typeof id === 'number' ? { 'jsonrpc.request.id': texts.text(String(id)) } : {}),
    'network.transport': 'tcp',
    'network.protocol.name': 'http',
    'http.request.method': ctx.httpMethod,
  };
}

/** The endpoint fit for a log line: its userinfo and query may carry the backend's credentials. */
function printableEndpoint(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}
