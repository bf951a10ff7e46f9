// The SSE answer to a 2026-07-28 POST without what the spec does not let it carry, for the pass-through,
// which relays an upstream's stream as it came: the rule is protocol/answer-stream-rule.ts (the catalog,
// which reads its members' messages one by one, keeps it too). A plain JSON answer never comes here.

import { Readable } from 'node:stream';
import type { Logger } from '../log/logger.js';
import { ANSWER, KEEP, STRAY, verdictOn, type AnsweredRequest, type Verdict } from '../protocol/answer-stream-rule.js';
import { relayedUpToResponse, SseParser } from '../protocol/sse.js';
import { RelayBody } from '../pipeline/relay-body.js';
import type { WholeSse } from '../protocol/whole-sse.js';

/**
 * Whether an event's data may be a message the stream must not carry, seen without parsing it: an `id`
 * (a request, or a response to check), an escape that could spell one, or the names of the notifications
 * a call's stream leaves out. The rest (a log message, the usual notification) goes on unparsed.
 */
function worthReading(data: string, listen: boolean): boolean {
  // A listen's every event is read: it carries only the kinds asked for, and is quiet (a change now and then).
  if (listen || data.includes('"id"') || data.includes('\\u') || data.includes('\\/')) return true;
  return data.includes('progressToken') || data.includes('list_changed') || data.includes('/updated') || data.includes('subscriptions/');
}

/**
 * The verdict on one event (protocol/answer-stream-rule.ts). Events without data (comments, a `retry`) are
 * framing, and go on; so does an event that cannot be one the rule leaves out (worthReading), unparsed.
 * `reading`: the whole stream's events, event `at` being this one, whose parse of an event naming "id" is
 * kept for the steps after (the audit, the edge), so the answer's JSON is parsed once for all of them.
 */
function judge(data: string | undefined, request: AnsweredRequest, reading: WholeSse | undefined, at: number): Verdict {
  if (data === undefined || data === '' || !worthReading(data, request.listen)) return KEEP;
  return verdictOn(reading !== undefined && data.includes('"id"') ? reading.message(at) : parseOrUndefined(data), request);
}

function parseOrUndefined(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

/**
 * The answer stream without the messages it must not carry, and without anything after its response (which
 * "SHOULD terminate the stream"). A stream that came whole and carries nothing stray is returned as it is,
 * its events read once (the reading is the body's, which the audit and the edge use after); one that did is
 * written again from the events that stay. A stream still coming is read event by event (scopedEvents).
 */
export function scopeModernAnswer(body: RelayBody, request: AnsweredRequest, upstream: string, log: Logger, callId: string): RelayBody {
  const reading = body.peekWholeSse();
  if (reading !== undefined && reading.complete) return wholeScoped(body, reading, request, upstream, log, callId);
  const source = body.readable();
  const relayed = Readable.from(scopedEvents(source, request, body.maxMessageBytes, upstream, log, callId), { objectMode: false });
  // Stopping the relay stops the upstream's body at once: a Readable.from of a generator would wait for its next step.
  return RelayBody.fromReadable(relayed, () => source.destroy(), body.maxMessageBytes);
}

function wholeScoped(body: RelayBody, reading: WholeSse, request: AnsweredRequest, upstream: string, log: Logger, callId: string): RelayBody {
  let answered = false;
  let kept: string[] | undefined;
  const events = reading.events;
  for (let at = 0; at < events.length; at++) {
    const ev = events[at]!;
    const verdict = answered ? (ev.data === undefined || ev.data === '' ? KEEP : STRAY) : judge(ev.data, request, reading, at);
    if (verdict === ANSWER) answered = true;
    if (verdict !== STRAY) kept?.push(ev.raw);
    else if (kept === undefined) kept = events.slice(0, at).map((e) => e.raw);
  }
  if (kept === undefined) return body;
  body.dump();
  log.warn('an upstream sent messages that do not belong on the answer to a request; they are left out', { upstream, dropped: events.length - kept.length, callId });
  return RelayBody.of(Buffer.from(kept.join(''), 'utf8'));
}

/**
 * A stream still coming, event by event. It ends with the response: nothing after it may reach the client,
 * and an upstream that kept its stream open (the response "SHOULD terminate the stream") held the client's
 * answer open with it, up to its body timeout, until 5 December. Returning here lets the upstream's body go.
 */
async function* scopedEvents(source: Readable, request: AnsweredRequest, maxEventChars: number, upstream: string, log: Logger, callId: string): AsyncGenerator<string, void, void> {
  const parser = new SseParser(maxEventChars);
  let dropped = 0;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      for (const ev of parser.push(chunk)) {
        const verdict = judge(ev.data, request, undefined, 0);
        if (verdict === STRAY) dropped++;
        else yield relayedUpToResponse(ev.raw, verdict === ANSWER);
        if (verdict === ANSWER) return;
      }
    }
  } finally {
    if (dropped > 0) log.warn('an upstream sent messages that do not belong on the answer to a request; they are left out', { upstream, dropped, callId });
  }
}
