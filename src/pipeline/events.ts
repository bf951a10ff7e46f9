// What happens to each call, published on `node:diagnostics_channel` (undici's way): a call starts, a
// stage refuses it, the upstream answers, the call ends. Metrics and the request log subscribe; stages
// publish and never know who listens. With no subscriber a publish costs a property read.

import diagnostics from 'node:diagnostics_channel';
import { refusalCode, ruleOf, type Refusal } from '../errors.js';
import type { TraceContext } from '../protocol/trace-context.js';
import type { CallContext } from './context.js';
import type { FinalAnswer } from './final-answer.js';

/** Why a call ended as it did, in the words of the metrics and the log. */
export type CallOutcomeWord = 'ok' | 'refused' | 'client_error' | 'upstream_error' | 'aborted' | 'tool_error';

/**
 * The status of a request whose client left before any answer was sent (outcome `aborted`): nginx's 499
 * "client closed request". Node's response holds 200 until something is written, which no client got.
 */
export const CLIENT_CLOSED_STATUS = 499;

/** The status an ended response stands for: what was sent, or CLIENT_CLOSED_STATUS when its client left before the headers. */
export function closedStatus(res: { readonly headersSent: boolean; readonly writableFinished: boolean; readonly statusCode: number }): number {
  return res.writableFinished || res.headersSent ? res.statusCode : CLIENT_CLOSED_STATUS;
}

export interface CallStartEvent {
  callId: string;
  /** The edge (one gateway) the call arrived on: subscribers of several gateways in one process tell them apart. */
  edge: object;
  ctx: CallContext;
}

/**
 * A request the edge refused before its call existed (front door, auth), as its refusal and its end share
 * it: the trace it belongs to, for its span and its request line, as a call's context carries it.
 */
export interface RefusedRequest {
  /** `performance.now()` when the request arrived. */
  readonly receivedAt: number;
  /** The client's trace context, from valid traceparent/tracestate headers (the body is not read for it). */
  readonly trace?: TraceContext;
  /**
   * The trace id of the SERVER span tracing started at the refusal, when it records and the client sent no
   * trace context: set by the tracing subscriber of the refused event, read by the request line.
   */
  spanTraceId?: string;
}

export interface CallRefusedEvent {
  callId: string;
  edge: object;
  /** The stage that refused: `admission`, `auth`, `resolve`, `access`, `arguments`, `upstream`, `output`. */
  stage: string;
  code: string;
  refusal: Refusal;
  /** The policy entry that refused, when one did (egress rule, rate limit, budget, breaker). */
  rule?: string;
  /** The request, when the edge refused it before its call existed (its end event carries the same). */
  request?: RefusedRequest;
}

export interface UpstreamAnswerEvent {
  callId: string;
  edge: object;
  upstream: string;
  /** What the adapter answered with: `relay` (the upstream's own bytes), `stream`, `json`, `refused`… */
  kind: string;
  /** Seconds from the call entering the upstream stage until the adapter answered (headers in, or a stream started). */
  seconds: number;
}

/**
 * The call enters the upstream stage (published synchronously, before the adapter runs). A subscriber may
 * set `ctx.upstreamTrace`: the trace context the adapter then sends upstream instead of the client's (tracing
 * sets its CLIENT span's).
 */
export interface UpstreamStartEvent {
  callId: string;
  edge: object;
  ctx: CallContext;
  upstream: string;
}

/**
 * A stage waited on the store or the network (a rate-limit take, a budget spend, a DNS lookup, the audit
 * append…); published when the wait settles, so a slow call shows where its time went.
 */
/** A stage looked at the call and handed it on (its refusals are `CallRefusedEvent`s). */
export interface StagePassedEvent {
  callId: string;
  edge: object;
  stage: string;
}

export interface StageWaitEvent {
  callId: string;
  edge: object;
  /** The stage that waited (`rateLimit`, `budget`, `breaker`, `idempotency`, `approval`, `pin`, `egress`, `audit`). */
  stage: string;
  /** What it waited on: `store.take`, `store.spend`, `dns.resolve`… */
  wait: string;
  /** Seconds the wait took. */
  seconds: number;
  /** `performance.now()` when the wait ended, for a wait published after the fact (the edge's, once the call exists); now when absent. */
  endedAt?: number;
  /** Set when the wait failed: the error's name or code. */
  error?: string;
}

export interface CallEndEvent {
  callId: string;
  edge: object;
  /** Absent for requests refused before the call could be described (front door, auth). */
  ctx?: CallContext;
  /** Such a request, when the edge refused it: the trace it belongs to. */
  request?: RefusedRequest;
  httpMethod: string;
  /** JSON-RPC method when the body was read. */
  method?: string;
  era?: string;
  /** The HTTP status answered; CLIENT_CLOSED_STATUS (499) when the client left before any was sent. */
  status: number;
  outcome: CallOutcomeWord;
  /** The refusal code, when a stage or the edge refused. */
  refusal?: string;
  /** The stage that refused. */
  stage?: string;
  /** The policy entry that refused, by id. */
  rule?: string;
  seconds: number;
  /** The caller, once authenticated. */
  subject?: string;
  /** The tool or prompt name the client used (tools/call, prompts/get). */
  tool?: string;
  prompt?: string;
  upstream?: string;
  /**
   * The JSON-RPC error code of the answer, when it was one and Gatehouse read it: answers and refusals it
   * wrote, streams it relayed event by event, and relayed JSON bodies that carry an `error`.
   */
  rpcCode?: number;
  /**
   * A request Gatehouse made itself, not a client (the HTTP+SSE endpoint's listen GET and the DELETE that
   * ends a dropped connection's session): spans show it, the request log and the request metrics do not.
   */
  internal?: true;
}

/**
 * A governed call's final answer, before the client gets it (DESIGN.md §7: the audit write completes
 * before the answer leaves). Subscribers may hand work the answer must wait for, and add `_meta` to it.
 */
export interface CallAnswerEvent {
  callId: string;
  edge: object;
  ctx: CallContext;
  answer: FinalAnswer;
  /** The stage that refused, when one did. */
  stage?: string;
  /** The answer leaves only once `work` is done; if it fails, the client gets a failure instead. */
  waitFor(work: Promise<unknown>): void;
  /** An entry for the answer's `_meta` (results and tool refusals; errors have none). */
  addMeta(key: string, value: unknown): void;
}

export const channels = {
  start: diagnostics.channel('gatehouse:call:start'),
  refused: diagnostics.channel('gatehouse:call:refused'),
  upstream: diagnostics.channel('gatehouse:call:upstream'),
  upstreamStart: diagnostics.channel('gatehouse:call:upstream-start'),
  wait: diagnostics.channel('gatehouse:call:wait'),
  passed: diagnostics.channel('gatehouse:call:passed'),
  answer: diagnostics.channel('gatehouse:call:answer'),
  end: diagnostics.channel('gatehouse:call:end'),
} as const;

/** `request`: the edge's refusals of requests whose call does not exist yet. */
export function publishRefused(call: { callId: string; edge: object }, stage: string, refusal: Refusal, request?: RefusedRequest): void {
  if (channels.refused.hasSubscribers) {
    const rule = ruleOf(refusal);
    channels.refused.publish({ callId: call.callId, edge: call.edge, stage, code: refusalCode(refusal), refusal, ...(rule !== undefined ? { rule } : {}), ...(request !== undefined ? { request } : {}) } satisfies CallRefusedEvent);
  }
}

export function publishUpstreamAnswer(ctx: CallContext, upstream: string, kind: string, seconds: number): void {
  if (channels.upstream.hasSubscribers) channels.upstream.publish({ callId: ctx.callId, edge: ctx.edge, upstream, kind, seconds } satisfies UpstreamAnswerEvent);
}

/** The call enters the upstream stage; subscribers may set `ctx.upstreamTrace` (synchronously). */
export function publishUpstreamStart(ctx: CallContext, upstream: string): void {
  if (channels.upstreamStart.hasSubscribers) channels.upstreamStart.publish({ callId: ctx.callId, edge: ctx.edge, ctx, upstream } satisfies UpstreamStartEvent);
}

/**
 * `work`, a stage's wait on the store or the network, published as a `StageWaitEvent` when it settles. With
 * no subscriber it is `work` itself: no clock read, no allocation. The clock starts when this is called,
 * just after `work` was created (what the store or resolver did synchronously before is not counted).
 */
export function waitedOn<T>(call: { callId: string; edge: object }, stage: string, wait: string, work: Promise<T>): Promise<T> {
  if (!channels.wait.hasSubscribers) return work;
  const started = performance.now();
  const settled = (error?: unknown): void => {
    if (!channels.wait.hasSubscribers) return;
    const seconds = (performance.now() - started) / 1000;
    channels.wait.publish({ callId: call.callId, edge: call.edge, stage, wait, seconds, ...(error !== undefined ? { error: errorName(error) } : {}) } satisfies StageWaitEvent);
  };
  return work.then(
    (value) => {
      settled();
      return value;
    },
    (err: unknown) => {
      settled(err ?? 'error');
      throw err;
    },
  );
}

/**
 * `waitedOn` for work that may be done already (Store.takeTokens, spendBudget, breakerAdmit): a promise
 * is waited on as there, an answer is returned as it is and published as a wait of no time, so a trace
 * shows the step either way.
 */
export function waitedOnAnswer<T>(call: { callId: string; edge: object }, stage: string, wait: string, answer: T | Promise<T>): T | Promise<T> {
  if (answer instanceof Promise) return waitedOn(call, stage, wait, answer);
  if (channels.wait.hasSubscribers) channels.wait.publish({ callId: call.callId, edge: call.edge, stage, wait, seconds: 0 } satisfies StageWaitEvent);
  return answer;
}

function errorName(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return err instanceof Error ? err.name : 'error';
}

/**
 * Subscribes to one channel for as long as the returned function is not called. Subscribers of a gateway
 * filter on their own edge; `diagnostics_channel` is process-wide.
 */
export function subscribe<T>(channel: diagnostics.Channel, handler: (event: T) => void): () => void {
  // diagnostics_channel rethrows a subscriber's error on the next tick, which would end the process: a bug in
  // an observer (a log line, a metric, a span) must not take every call down with it. Said once per subscriber.
  let warned = false;
  const listener = (message: unknown): void => {
    try {
      handler(message as T);
    } catch (err) {
      // On the answer event a subscriber's failure is the answer's: it is withheld (the audit fails closed).
      const answer = message as Partial<CallAnswerEvent>;
      if (typeof answer.waitFor === 'function') answer.waitFor(Promise.reject(err));
      if (warned) return;
      warned = true;
      process.emitWarning(`a subscriber of ${String(channel.name)} failed (later failures of it are not reported): ${(err as Error)?.stack ?? String(err)}`, 'GatehouseSubscriberError');
    }
  };
  channel.subscribe(listener);
  return () => channel.unsubscribe(listener);
}
