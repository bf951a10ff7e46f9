// What the edge learns from an answer it wrote or relayed: whether the tool failed and, for a JSON-RPC
// error, its code. The end event carries both (metrics and the log count tool errors; spans record the code).

import type { GatewayError } from '../errors.js';

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
}

/** The summary of a failure the edge wrote as the answer. */
export function failureSummary(wire: unknown, failure: GatewayError): AnswerSummary {
  return { ...summaryOf(wire), failure };
}

export const NO_TOOL_ERROR: AnswerSummary = Object.freeze({ toolError: false });

/** The summary of one JSON-RPC message (anything else summarises as a plain success). */
export function summaryOf(message: unknown): AnswerSummary {
  const m = (message ?? {}) as { result?: { isError?: unknown }; error?: { code?: unknown } };
  if (m.result?.isError === true) return { toolError: true };
  const code = m.error?.code;
  return typeof code === 'number' ? { toolError: false, errorCode: code } : NO_TOOL_ERROR;
}
