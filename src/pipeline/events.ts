// What happens to each call, published on `node:diagnostics_channel` (undici's way): a call starts, a
// stage refuses it, the upstream answers, the call ends. Metrics and the request log subscribe; stages
// publish and never know who listens. With no subscriber a publish costs a property read.

import diagnostics from 'node:diagnostics_channel';
import { refusalCode, type Refusal } from '../errors.js';
import type { CallContext } from './context.js';
import type { FinalAnswer } from './final-answer.js';

/** Why a call ended as it did, in the words of the metrics and the log. */
export type CallOutcomeWord = 'ok' | 'refused' | 'client_error' | 'upstream_error' | 'aborted' | 'tool_error';

export interface CallStartEvent {
  callId: string;
  /** The edge (one gateway) the call arrived on: subscribers of several gateways in one process tell them apart. */
  edge: object;
  ctx: CallContext;
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

export interface CallEndEvent {
  callId: string;
  edge: object;
  /** Absent for requests refused before the call could be described (front door, auth). */
  ctx?: CallContext;
  httpMethod: string;
  /** JSON-RPC method when the body was read. */
  method?: string;
  era?: string;
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
  answer: diagnostics.channel('gatehouse:call:answer'),
  end: diagnostics.channel('gatehouse:call:end'),
} as const;

export function publishRefused(call: { callId: string; edge: object }, stage: string, refusal: Refusal): void {
  if (channels.refused.hasSubscribers) {
    const rule = refusal.kind === 'tool' || refusal.kind === 'transport' ? refusal.rule : undefined;
    channels.refused.publish({ callId: call.callId, edge: call.edge, stage, code: refusalCode(refusal), refusal, ...(rule !== undefined ? { rule } : {}) } satisfies CallRefusedEvent);
  }
}

export function publishUpstreamAnswer(ctx: CallContext, upstream: string, kind: string, seconds: number): void {
  if (channels.upstream.hasSubscribers) channels.upstream.publish({ callId: ctx.callId, edge: ctx.edge, upstream, kind, seconds } satisfies UpstreamAnswerEvent);
}

/**
 * Subscribes to one channel for as long as the returned function is not called. Subscribers of a gateway
 * filter on their own edge; `diagnostics_channel` is process-wide.
 */
export function subscribe<T>(channel: diagnostics.Channel, handler: (event: T) => void): () => void {
  const listener = (message: unknown): void => handler(message as T);
  channel.subscribe(listener);
  return () => channel.unsubscribe(listener);
}
