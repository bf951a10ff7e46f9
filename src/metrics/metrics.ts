// Prometheus metrics (prom-client), on their own registry per gateway so two gateways in one process
// (tests) never mix. Label values come only from bounded sets: MCP method names Gatehouse knows, tool
// names from the catalog, fixed refusal reasons. Anything else is counted as "other", so a client cannot
// grow the series count by sending made-up names.

import { createRequire } from 'node:module';
import type { Counter, Registry } from 'prom-client';
import { channels, subscribe, type CallEndEvent, type CallRefusedEvent } from '../pipeline/events.js';
import { KNOWN_CLIENT_METHODS } from '../protocol/methods.js';
import { CounterTally, TalliedHistogram } from './tallies.js';

/** Sub-millisecond buckets first: the gateway's own overhead is tens of microseconds. */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function methodLabel(method: string | undefined): string {
  if (method === undefined) return 'response';
  return KNOWN_CLIENT_METHODS.has(method) ? method : 'other';
}

export interface MetricsSources {
  inFlight(): number;
  legacySessions(): number;
  /** Whether the store (SQLite or Redis) can be counted on now. */
  storeUp(): boolean;
  /** What this replica last saw of each circuit breaker (policy.breakers). */
  breakers?(): Array<{ breaker: string; target: string; state: 'closed' | 'open' | 'half_open' }>;
  /**
   * Approvals waiting for a decision now (from the store, shared by replicas): 0 without approval rules,
   * and a rejection when the store cannot be read.
   */
  pendingApprovals?(): Promise<number>;
  /** Reachability and detected era per upstream, read at scrape time. */
  upstreams(): Promise<Array<{ name: string; up: boolean; era?: string | undefined }>>;
}

/**
 * prom-client, loaded when metrics are enabled (they are off by default): a gateway without them never
 * pays for it (about 10 MB of RSS; issue 17). It is CommonJS, so it can be required synchronously.
 */
let promClient: typeof import('prom-client') | undefined;
function loadPromClient(): typeof import('prom-client') {
  return (promClient ??= createRequire(import.meta.url)('prom-client') as typeof import('prom-client'));
}

export class GatewayMetrics {
  readonly registry: Registry;
  // Touched by every call: counted in tallies (tallies.ts), not through prom-client's label hashing.
  private readonly requests = new CounterTally(['method', 'era', 'upstream', 'outcome']);
  private readonly toolCalls = new CounterTally(['tool', 'outcome', 'error_code']);
  private readonly requestDuration: TalliedHistogram;
  private readonly upstreamDuration: TalliedHistogram;
  private readonly authFailures: Counter<'reason'>;
  private readonly refusals: Counter<'reason'>;
  private readonly policyRefusals: Counter<'code' | 'rule'>;
  private readonly egressProxyRequests: Counter<'upstream' | 'verdict'>;
  private readonly reloads: Counter<'result'>;
  private readonly storeErrors: Counter;
  private readonly approvalDecisions: Counter<'decision'>;
  private readonly pinnedToolChanges: Counter;

  constructor(sources: MetricsSources) {
    const { Counter, Gauge, Registry, collectDefaultMetrics } = loadPromClient();
    this.registry = new Registry();
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    // prom-client also publishes these gauges under a `_total` name, which Prometheus reserves for
    // counters (promtool flags them); the same values remain under the names without the suffix.
    for (const misnamed of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) this.registry.removeSingleMetric(misnamed);
    const requests = this.requests;
    const toolCalls = this.toolCalls;
    new Counter({ name: 'gatehouse_requests_total', help: 'MCP requests answered, by JSON-RPC method, client era, upstream and outcome.', labelNames: ['method', 'era', 'upstream', 'outcome'], registers, collect() { requests.flushInto(this); } });
    new Counter({ name: 'gatehouse_tool_calls_total', help: 'tools/call requests by public tool name (from the catalog; "other" otherwise), outcome and refusal code.', labelNames: ['tool', 'outcome', 'error_code'], registers, collect() { toolCalls.flushInto(this); } });
    this.requestDuration = new TalliedHistogram('gatehouse_request_duration_seconds', 'Time from request received to answer complete, in seconds.', ['method'], LATENCY_BUCKETS, registers);
    this.upstreamDuration = new TalliedHistogram('gatehouse_upstream_request_duration_seconds', 'Time until an upstream answers, in seconds: until an HTTP upstream\'s response starts, or a stdio child (or an HTTP+SSE server) answers the request.', ['upstream'], LATENCY_BUCKETS, registers);
    this.authFailures = new Counter({ name: 'gatehouse_auth_failures_total', help: 'Requests refused by authentication, by reason.', labelNames: ['reason'], registers });
    this.policyRefusals = new Counter({ name: 'gatehouse_policy_refusals_total', help: 'Calls refused by a policy entry (egress rule, rate limit, budget, breaker), by refusal code and the entry\'s id (default: the built-in egress defaults).', labelNames: ['code', 'rule'], registers });
    this.egressProxyRequests = new Counter({ name: 'gatehouse_egress_proxy_requests_total', help: 'Connections and requests through the egress proxy, by upstream (from its credentials; unknown without) and verdict (allowed or blocked).', labelNames: ['upstream', 'verdict'], registers });
    this.refusals = new Counter({ name: 'gatehouse_refusals_total', help: 'Requests refused, once each, by reason: any stage but authentication (the front door, the failed-auth limit, policy, argument and output checks), calls the upstream stage could not complete (upstream_unreachable, upstream_timeout and the like), and answers withheld because their audit or idempotency record could not be kept (state_unavailable).', labelNames: ['reason'], registers });
    this.reloads = new Counter({ name: 'gatehouse_config_reloads_total', help: 'Config reloads, by result (applied or refused).', labelNames: ['result'], registers });
    new Gauge({ name: 'gatehouse_in_flight_requests', help: 'Requests being answered now (listening streams excluded).', registers, collect() { this.set(sources.inFlight()); } });
    new Gauge({ name: 'gatehouse_legacy_sessions', help: 'Legacy (2025-era) sessions in use within the idle timeout.', registers, collect() { this.set(sources.legacySessions()); } });
    new Gauge({ name: 'gatehouse_store_up', help: 'Whether the store (SQLite or Redis) can be counted on (1) or governed calls are being refused (0).', registers, collect() { this.set(sources.storeUp() ? 1 : 0); } });
    new Gauge({
      name: 'gatehouse_circuit_state',
      help: 'Circuit breakers as this replica last saw them: 0 closed, 0.5 half-open (one probe let through), 1 open (calls refused).',
      labelNames: ['breaker', 'target'],
      registers,
      collect() {
        this.reset();
        for (const b of sources.breakers?.() ?? []) this.set({ breaker: b.breaker, target: b.target }, b.state === 'open' ? 1 : b.state === 'half_open' ? 0.5 : 0);
      },
    });
    this.approvalDecisions = new Counter({ name: 'gatehouse_approval_decisions_total', help: 'Approval decisions recorded by this replica: approved, rejected (by a reviewer or the user) and expired (noticed when the caller came back).', labelNames: ['decision'], registers });
    this.pinnedToolChanges = new Counter({ name: 'gatehouse_pinned_tool_changes_total', help: 'Changed tool definitions noticed by this replica (tools.pinning), each counted once per new definition.', registers });
    new Gauge({
      name: 'gatehouse_approvals_pending',
      help: 'Approvals waiting for a decision, from the store (all replicas); NaN while the store cannot be read.',
      registers,
      async collect() {
        // Never the last count read: a store that cannot be read makes it unknown (NaN: no alert on a
        // count fires, a graph shows a gap, gatehouse_store_up says why), and no approval rules make it 0.
        this.set(sources.pendingApprovals === undefined ? 0 : await sources.pendingApprovals().catch(() => Number.NaN));
      },
    });
    this.storeErrors = new Counter({ name: 'gatehouse_store_errors_total', help: 'Store operations that failed (each one fails its call closed).', registers });
    // Both gauges come from one probe per scrape. prom-client asks every metric for its values at once, so
    // each gauge collects for itself, awaiting the probe whichever was asked first started: `info` filled in
    // by `up`'s collect gave its values before that probe answered (the scrape before's era, none at first).
    let probing: ReturnType<MetricsSources['upstreams']> | undefined;
    const probe = (): ReturnType<MetricsSources['upstreams']> => (probing ??= sources.upstreams().finally(() => (probing = undefined)));
    new Gauge({
      name: 'gatehouse_upstream_up',
      help: 'Whether the upstream answers (1) or not (0).',
      labelNames: ['upstream'],
      registers,
      async collect() {
        const states = await probe();
        this.reset();
        for (const s of states) this.set({ upstream: s.name }, s.up ? 1 : 0);
      },
    });
    new Gauge({
      name: 'gatehouse_upstream_info',
      help: 'Detected protocol era of each upstream (value always 1).',
      labelNames: ['upstream', 'era'],
      registers,
      async collect() {
        const states = await probe();
        this.reset();
        for (const s of states) this.set({ upstream: s.name, era: s.era ?? 'unknown' }, 1);
      },
    });
  }

  /**
   * Counts the calls and refusals of one edge from the pipeline's events. `toolLabel` bounds the tool label:
   * a name the catalog has not listed is counted as `other`. Returns the unsubscribe function.
   */
  observe(edge: object, toolLabel: (name: string) => string | undefined): () => void {
    const ended = subscribe<CallEndEvent>(channels.end, (e) => {
      // Only what clients asked: not the requests Gatehouse makes for them (events.ts `internal`).
      if (e.edge !== edge || e.internal === true) return;
      // Requests refused before their body was read carry no JSON-RPC method.
      const method = e.method !== undefined ? methodLabel(e.method) : e.ctx?.kind === 'response' ? 'response' : e.httpMethod === 'POST' ? 'other' : e.httpMethod;
      this.requests.inc(method, e.era ?? 'unknown', e.upstream ?? 'unknown', e.outcome);
      this.requestDuration.observe(e.seconds, method);
      if (e.method === 'tools/call') this.toolCalls.inc((e.tool !== undefined ? toolLabel(e.tool) : undefined) ?? 'other', e.outcome, e.refusal ?? '');
    });
    const refused = subscribe<CallRefusedEvent>(channels.refused, (e) => {
      if (e.edge !== edge) return;
      if (e.refusal.kind === 'auth') this.authFailures.inc({ reason: e.code });
      else this.refusals.inc({ reason: e.code });
      // Rule ids come from the config, so the label stays bounded.
      if (e.rule !== undefined) this.policyRefusals.inc({ code: e.code, rule: e.rule });
    });
    return () => {
      ended();
      refused();
    };
  }

  upstreamResponse(upstream: string, seconds: number): void {
    this.upstreamDuration.observe(seconds, upstream);
  }

  egressProxy(upstream: string, verdict: 'allowed' | 'blocked'): void {
    this.egressProxyRequests.inc({ upstream, verdict });
  }

  storeError(): void {
    this.storeErrors.inc();
  }

  approvalDecided(decision: 'approved' | 'rejected' | 'expired'): void {
    this.approvalDecisions.inc({ decision });
  }

  pinnedToolChanged(): void {
    this.pinnedToolChanges.inc();
  }

  /**
   * The counters of span exports that failed (tracing.enabled: registered only then, so a gateway that does
   * not trace shows no series for it). Returns what the tracer calls with the spans of each failed export.
   */
  traceExports(): (spans: number, reason: 'export_failed' | 'queue_full') => void {
    const { Counter } = loadPromClient();
    const registers = [this.registry];
    const failures = new Counter({ name: 'gatehouse_trace_export_failures_total', help: 'Span exports to the OTLP endpoint that failed (refused, unreachable or timed out); their spans are dropped.', registers });
    const dropped = new Counter({ name: 'gatehouse_trace_spans_dropped_total', help: 'Spans lost: in failed exports to the OTLP endpoint (reason="export_failed"), or dropped because the export queue was full (reason="queue_full").', labelNames: ['reason'] as const, registers });
    // Both series from the start, at 0, so an alert can be written on either.
    dropped.inc({ reason: 'export_failed' }, 0);
    dropped.inc({ reason: 'queue_full' }, 0);
    return (spans, reason) => {
      if (reason === 'export_failed') failures.inc();
      dropped.inc({ reason }, spans);
    };
  }

  reload(result: 'applied' | 'refused'): void {
    this.reloads.inc({ result });
  }
}
