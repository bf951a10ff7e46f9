// One `request` line per answered MCP request, written from the pipeline's `end` event: who asked for
// what, where it went, how it ended (the same outcome words as the metrics) and how long it took.
//
// It is written for every call, so it is built as a string from the event's fields: no object to copy,
// sanitise and serialise again (issue 17: the line may cost at most 5% of a call). Only the strings a client
// chose (subject, tool, prompt, method) can carry a credential; they are clipped and scrubbed. The rest are
// Gatehouse's own words and ids, or config names, whose JSON text is kept (`nameJson`).

import { channels, subscribe, type CallEndEvent } from '../pipeline/events.js';
import { nameJson, redactText, type Logger } from './logger.js';

const FIELD_MAX = 200;
/**
 * How far past the cut a long string is scrubbed before it is cut: a credential that straddles the cut is
 * then found whole. Scrubbed after the cut, a `gh_` key with fewer than 20 characters left before it was
 * too short for its shape, and a configured secret cut in two no longer matched the finished line's scrub:
 * their first characters were logged (as tracing's clientText, which has the same slack).
 */
const SCRUB_SLACK = 512;

/** What a long client string is scrubbed with before its cut: the logger's `scrub` (shapes and configured secrets). */
export type Scrub = (text: string) => string;

/**
 * A client-chosen value as a JSON string: cut, so one request cannot write a megabyte into the log, and
 * scrubbed. Typed strings may still be anything a hostile body held (a refused request's `method` is
 * whatever it sent), so a value that is not a string is written as its JSON text, never trusted to be one:
 * a subscriber that throws would take the process down with it. A string within FIELD_MAX is scrubbed of
 * credential shapes here and of configured secrets with the finished line; a longer one of both before it
 * is cut (`scrub`), since a secret the cut runs through would no longer be whole there.
 */
function clientText(value: unknown, scrub: Scrub): string {
  if (typeof value === 'string' && value.length <= FIELD_MAX) {
    const known = clientTexts.get(value);
    if (known !== undefined) return known;
  }
  const s = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  let scrubbed: string;
  if (s.length <= FIELD_MAX) scrubbed = redactText(s);
  else {
    const cleaned = scrub(s.length <= FIELD_MAX + SCRUB_SLACK ? s : s.slice(0, FIELD_MAX + SCRUB_SLACK));
    scrubbed = cleaned.length <= FIELD_MAX ? cleaned : `${cleaned.slice(0, FIELD_MAX)}…`;
  }
  const text = JSON.stringify(scrubbed);
  // Kept only when nothing was cut or scrubbed, so the table never holds a credential a client sent.
  if (typeof value === 'string' && scrubbed === value) {
    if (clientTexts.size >= CLIENT_TEXTS_MAX) clientTexts.clear();
    clientTexts.set(value, text);
  }
  return text;
}

/**
 * The JSON text of client strings seen before. The same few recur on every line (the method, the tool
 * names, the callers), and scrubbing and escaping them again was most of what a line cost. Bounded: a
 * client that sends ever new names empties it, and pays what every line paid without it.
 */
const clientTexts = new Map<string, string>();
const CLIENT_TEXTS_MAX = 1024;

/** How many client strings are known (for tests). */
export function knownClientTexts(): number {
  return clientTexts.size;
}

/** `.001` to `.999` without trailing zeros (`.5`, `.25`), and nothing for 0: the decimals of a millisecond count. */
const FRACTIONS = Array.from({ length: 1000 }, (_, i) => (i === 0 ? '' : `.${String(i).padStart(3, '0').replace(/0+$/, '')}`));

/**
 * Seconds as milliseconds with at most three decimals (`1.235`, `12.5`, `3`), as a JSON number. Written
 * from whole microseconds and a table of the decimals: V8 writes a fraction through its slow
 * number-to-string path, and this runs on every line.
 */
export function millisText(seconds: number): string {
  const us = Math.round(seconds * 1e6);
  // Beyond a small integer (12 days) or not a number at all: the plain way, still a JSON number.
  if (!(us >= 0 && us <= 0x3fffffff)) return String(Number.isFinite(us) ? us / 1e3 : 0);
  const whole = (us / 1000) | 0;
  return String(whole) + FRACTIONS[us - whole * 1000]!;
}

/**
 * The line's fields as JSON members, in the order they have always been written; `scrub`: the logger's.
 * `traced`: tracing is on, so a call without a client trace context may carry the trace Gatehouse started.
 */
export function requestMembers(e: CallEndEvent, scrub: Scrub = redactText, traced = false): string {
  let out = `"callId":"${e.callId}","method":${clientText(e.method ?? e.httpMethod, scrub)}`;
  if (e.era !== undefined) out += `,"era":"${e.era}"`;
  if (e.subject !== undefined) out += `,"subject":${clientText(e.subject, scrub)}`;
  if (e.tool !== undefined) out += `,"tool":${clientText(e.tool, scrub)}`;
  if (e.prompt !== undefined) out += `,"prompt":${clientText(e.prompt, scrub)}`;
  if (e.upstream !== undefined) out += `,"upstream":${nameJson(e.upstream)}`;
  out += `,"status":${e.status},"outcome":"${e.outcome}"`;
  if (e.refusal !== undefined) {
    out += `,"refusal":${nameJson(e.refusal)}`;
    if (e.stage !== undefined) out += `,"stage":${nameJson(e.stage)}`;
    if (e.rule !== undefined) out += `,"rule":${nameJson(e.rule)}`;
  }
  out += `,"durationMs":${millisText(e.seconds)}`;
  const ctx = e.ctx;
  if (ctx !== undefined) {
    const trace = ctx.trace;
    if (trace) out += `,"traceId":"${trace.traceId}"`;
    // With tracing off nothing sets it: read only when the gateway traces (`traced`).
    else if (traced && ctx.spanTraceId !== undefined) out += `,"traceId":"${ctx.spanTraceId}"`;
  } else if (e.request !== undefined) {
    // Refused before its call existed (front door, auth): the same trace, from the refused request. A
    // branch of its own, so a call's line reads its context as it always did.
    const trace = e.request.trace;
    if (trace) out += `,"traceId":"${trace.traceId}"`;
    else if (e.request.spanTraceId !== undefined) out += `,"traceId":"${e.request.spanTraceId}"`;
  }
  return out;
}

/** Logs every call that ends on `edge` (`traced`: tracing.enabled); returns the unsubscribe function. */
export function logRequests(edge: object, log: Logger, traced = false): () => void {
  const scrub: Scrub = (text) => log.scrub(text);
  return subscribe<CallEndEvent>(channels.end, (e) => {
    // Only what clients asked: not the requests Gatehouse makes for them (events.ts `internal`).
    if (e.edge === edge && e.internal !== true) log.infoMembers('request', requestMembers(e, scrub, traced));
  });
}
