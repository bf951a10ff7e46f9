// One `request` line per answered MCP request, written from the pipeline's `end` event: who asked for
// what, where it went, how it ended (the same outcome words as the metrics) and how long it took.
//
// It is written for every call, so it is built as a string from the event's fields: no object to copy,
// sanitise and serialise again (issue 17: the line may cost at most 5% of a call). Only the strings a client
// chose (subject, tool, prompt, method) can carry a credential; they are clipped and scrubbed. The rest are
// Gatehouse's own words and ids, or config names.

import { channels, subscribe, type CallEndEvent } from '../pipeline/events.js';
import { redactText, type Logger } from './logger.js';

const FIELD_MAX = 200;

/**
 * A client-chosen value as a JSON string: cut, so one request cannot write a megabyte into the log, and
 * scrubbed. Typed strings may still be anything a hostile body held (a refused request's `method` is
 * whatever it sent), so a value that is not a string is written as its JSON text, never trusted to be one:
 * a subscriber that throws would take the process down with it.
 */
function clientText(value: unknown): string {
  const s = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return JSON.stringify(redactText(s.length <= FIELD_MAX ? s : `${s.slice(0, FIELD_MAX)}…`));
}

/** The line's fields as JSON members, in the order they have always been written. */
export function requestMembers(e: CallEndEvent): string {
  let out = `"callId":"${e.callId}","method":${clientText(e.method ?? e.httpMethod)}`;
  if (e.era !== undefined) out += `,"era":"${e.era}"`;
  if (e.subject !== undefined) out += `,"subject":${clientText(e.subject)}`;
  if (e.tool !== undefined) out += `,"tool":${clientText(e.tool)}`;
  if (e.prompt !== undefined) out += `,"prompt":${clientText(e.prompt)}`;
  if (e.upstream !== undefined) out += `,"upstream":${JSON.stringify(e.upstream)}`;
  out += `,"status":${e.status},"outcome":"${e.outcome}"`;
  if (e.refusal !== undefined) {
    out += `,"refusal":${JSON.stringify(e.refusal)}`;
    if (e.stage !== undefined) out += `,"stage":${JSON.stringify(e.stage)}`;
    if (e.rule !== undefined) out += `,"rule":${JSON.stringify(e.rule)}`;
  }
  out += `,"durationMs":${Math.round(e.seconds * 1e6) / 1e3}`;
  const trace = e.ctx?.trace;
  if (trace) out += `,"traceId":"${trace.traceId}"`;
  return out;
}

/** Logs every call that ends on `edge`; returns the unsubscribe function. */
export function logRequests(edge: object, log: Logger): () => void {
  return subscribe<CallEndEvent>(channels.end, (e) => {
    if (e.edge === edge) log.infoMembers('request', requestMembers(e));
  });
}
