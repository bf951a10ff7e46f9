// One `request` line per answered MCP request, written from the pipeline's `end` event: who asked for
// what, where it went, how it ended (the same outcome words as the metrics) and how long it took.

import { channels, subscribe, type CallEndEvent } from '../pipeline/events.js';
import type { Logger } from './logger.js';

const FIELD_MAX = 200;

/** Client-chosen strings are cut, so one request cannot write a megabyte into the log. */
function clip(s: string): string {
  return s.length <= FIELD_MAX ? s : `${s.slice(0, FIELD_MAX)}…`;
}

/** Logs every call that ends on `edge`; returns the unsubscribe function. */
export function logRequests(edge: object, log: Logger): () => void {
  return subscribe<CallEndEvent>(channels.end, (e) => {
    if (e.edge !== edge) return;
    const trace = e.ctx?.trace;
    log.info('request', {
      callId: e.callId,
      method: e.method ?? e.httpMethod,
      ...(e.era !== undefined ? { era: e.era } : {}),
      ...(e.subject !== undefined ? { subject: clip(e.subject) } : {}),
      ...(e.tool !== undefined ? { tool: clip(e.tool) } : {}),
      ...(e.prompt !== undefined ? { prompt: clip(e.prompt) } : {}),
      upstream: e.upstream,
      status: e.status,
      outcome: e.outcome,
      ...(e.refusal !== undefined ? { refusal: e.refusal, stage: e.stage, ...(e.rule !== undefined ? { rule: e.rule } : {}) } : {}),
      durationMs: Math.round(e.seconds * 1e6) / 1e3,
      ...(trace ? { traceId: trace.traceId } : {}),
    });
  });
}
