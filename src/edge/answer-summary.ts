// What the edge learns from an answer it wrote or relayed: whether the tool failed and, for a JSON-RPC
// error, its code. The end event carries both (metrics and the log count tool errors; spans record the code).

import { refusalCode, upstreamFailureOf, type GatewayError, type Refusal } from '../errors.js';
import type { StreamRefusal } from '../pipeline/call-stream.js';
import { publishRefused } from '../pipeline/events.js';
import type { CallRecord } from './edge-core.js';

export interface AnswerSummary {
  /** The final answer was a tool result with `isError: true` (the tool failed; not a refusal). */
  toolError: boolean;
  /** The final answer was a JSON-RPC error with this code. */
  errorCode?: number;
  /**
   * The final answer was this failure, written by the edge after the answer had begun (a stream the
   * upstream broke off or ended without the response): the call ended as that failure, as a refusal
   * before the answer began would have.
   */
  failure?: GatewayError;
  /** The final answer was a refusal a stage put in place of a stream's answer (CallStream.refused). */
  refused?: StreamRefusal;
}

/**
 * A refusal a stage wrote as a stream's final message ends the call as refused by that stage, as it would
 * had the answer been JSON: the stage published it when it refused (the output check does), so it is only
 * recorded here. Without this the request line said tool_error, with no refusal and no stage.
 */
export function recordWrittenRefusal(record: CallRecord, refused: StreamRefusal): void {
  if (record.refusal !== undefined) return;
  const refusal = refused.refusal;
  record.refusal = refusalCode(refusal);
  record.stage = refused.stage ?? 'upstream';
  if ((refusal.kind === 'tool' || refusal.kind === 'transport') && refusal.rule !== undefined) record.rule = refusal.rule;
}

/** The summary of a failure the edge wrote as the answer. */
export function failureSummary(wire: unknown, failure: GatewayError): AnswerSummary {
  return { ...summaryOf(wire), failure };
}

/**
 * A failure written once the answer had begun (a 200 stream the upstream broke off) ends the call as that
 * failure, as a refusal made before the answer began would: the request line and the metrics say
 * upstream_error, with the failure's code and stage `upstream`, as the audit says failed. A refusal of
 * Gatehouse's own written so (no room for another upstream session: errors.ts refusedBeforeUpstream) says
 * refused with its code, no upstream error. Both edges (the Streamable HTTP one and the 2024-11-05 SSE
 * endpoint) record it so, and publish it as the upstream stage's refusal (`edge`: the edge's token), so the
 * metrics' refusals count it and the span has its refusal event, as for a failure found before the answer.
 */
export function recordWrittenFailure(record: CallRecord, failure: GatewayError, edge: object): void {
  if (record.refusal !== undefined) return;
  const refusal: Refusal = { kind: 'failure', error: failure };
  const upstreams = upstreamFailureOf(refusal) !== undefined;
  if (!upstreams && !failure.refusedBeforeUpstream) return;
  record.refusal = refusalCode(refusal);
  record.stage = 'upstream';
  if (upstreams) record.upstreamFailed = true;
  publishRefused({ callId: record.callId, edge }, 'upstream', refusal);
}

export const NO_TOOL_ERROR: AnswerSummary = Object.freeze({ toolError: false });

/** The summary of one JSON-RPC message (anything else summarises as a plain success). */
export function summaryOf(message: unknown): AnswerSummary {
  const m = (message ?? {}) as { result?: { isError?: unknown }; error?: { code?: unknown } };
  if (m.result?.isError === true) return { toolError: true };
  const code = m.error?.code;
  return typeof code === 'number' ? { toolError: false, errorCode: code } : NO_TOOL_ERROR;
}
