// Relays an upstream SSE body to the client event by event, as each event completes, honouring the
// client's backpressure. When the stream breaks before the answer to the client's request arrived, the
// client gets a JSON-RPC error for that request instead of a silent end.

import type { ServerResponse } from 'node:http';
import { answerIn, answers, type SseResponse, type WholeSse } from '../protocol/whole-sse.js';
import type { Readable } from 'node:stream';
import { GatewayError, toWire, type WireContext } from '../errors.js';
import type { JsonRpcId } from '../protocol/jsonrpc.js';
import { SseParser, formatSseMessage, type SseEvent } from '../protocol/sse.js';
import { failureSummary, summaryOf, type AnswerSummary } from './answer-summary.js';
import { waitForDrain } from './backpressure.js';
import type { Cancellation } from '../pipeline/cancellation.js';
import type { RelayRefusal } from '../pipeline/outcome.js';

export interface RelayContext extends WireContext {
  cancel: Cancellation;
  requestId: JsonRpcId | null;
  upstream: string;
  /** What a broken body means, told by the adapter that knows its transport's errors. */
  failureOf(err: unknown): GatewayError;
  log?: { warn(msg: string, fields?: Record<string, unknown>): void };
  onSummary?: (summary: AnswerSummary) => void;
  /** The most one event may hold (the upstream's `maxMessageBytes`); the parser's own bound otherwise. */
  maxEventChars?: number;
  /** A stage's refusal written in place of the answer event (Outcome relay `refused`), read once the relay is done. */
  refused?: RelayRefusal | undefined;
}

/** The summary, with the refusal a stage wrote in place of the answer event, if one did. */
function withRefusal(summary: AnswerSummary, ctx: RelayContext): AnswerSummary {
  const refused = ctx.refused?.value;
  return refused === undefined ? summary : { ...summary, refused };
}

/**
 * Holds the response's writes until the current turn of the event loop is over (setImmediate: the events
 * of a chunk reach the relay through several ticks), then sends them in one write: the headers, the events
 * of a chunk, and the end when it comes in the same turn. Written one by one, each was a system call.
 */
export function corkForThisTurn(res: ServerResponse): void {
  res.cork();
  setImmediate(uncork, res);
}

function uncork(res: ServerResponse): void {
  res.uncork();
}

/**
 * What a relay learns from the events it passes on: whether the request's answer came (and what it was),
 * and whether the stream carried event ids, so a client may resume it.
 */
class AnswerWatch {
  answered: boolean;
  resumable = false;
  summary: AnswerSummary = { toolError: false };

  constructor(private readonly ctx: RelayContext) {
    // Only a POST that carried a request waits for a final response on its stream.
    this.answered = ctx.requestId === null;
  }

  see(ev: SseEvent): void {
    if (ev.id !== undefined && ev.id !== '') this.resumable = true;
    if (this.answered || ev.data === undefined) return;
    const response = responseTo(ev.data, this.ctx.requestId);
    if (response !== undefined) this.answeredBy(response);
  }

  /** `see` for an event of a stream read whole: its JSON is parsed there, once for every step. */
  seeRead(reading: WholeSse, at: number): void {
    const ev = reading.events[at]!;
    if (ev.id !== undefined && ev.id !== '') this.resumable = true;
    if (this.answered || ev.data === undefined) return;
    const message = reading.message(at);
    if (answers(message, this.ctx.requestId, true)) this.answeredBy(message);
  }

  private answeredBy(response: SseResponse): void {
    this.answered = true;
    this.summary = summaryOf(response);
  }

  /**
   * The error event the client gets for its request when the stream ended without the answer (or broke:
   * `failure`); undefined when nothing is missing. A 2025-11-25 server may close a stream that carried event
   * ids and expect the client to resume it with GET + Last-Event-ID (2025-11-25/basic/transports.mdx
   * §Sending Messages 6): that is not a failure.
   */
  missingAnswer(failure: GatewayError | undefined): string | undefined {
    if (this.answered || (failure === undefined && this.resumable)) return undefined;
    const ctx = this.ctx;
    const err = failure ?? new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${ctx.upstream}" ended the stream without answering the request`, ctx.upstream);
    ctx.log?.warn('upstream stream ended without a response', { code: err.code, callId: ctx.callId });
    const wire = toWire({ kind: 'failure', error: err }, { ...ctx, id: ctx.requestId }).body;
    this.summary = failureSummary(wire, err);
    return formatSseMessage(wire);
  }
}

/**
 * A stream that had all come, and ended, by the time it was answered (a short answer's usual case: its
 * headers, one event and its end in one read): its bytes go on in one write, read once for the summary,
 * without the Readable and async iteration the streaming relay takes (which doubled the CPU of such a
 * call; bench/README.md §SSE answers). Undefined when its last event is cut short: the streaming relay
 * then drops it, as it always has.
 */
export function relayWholeSse(bytes: Buffer, reading: WholeSse, res: ServerResponse, ctx: RelayContext): AnswerSummary | undefined {
  if (!reading.complete) return undefined;
  const watch = new AnswerWatch(ctx);
  for (let i = 0; i < reading.events.length; i++) watch.seeRead(reading, i);
  const missing = watch.missingAnswer(undefined);
  // With the headers, in one write.
  res.end(missing === undefined ? bytes : Buffer.concat([bytes, Buffer.from(missing)]));
  const summary = withRefusal(watch.summary, ctx);
  ctx.onSummary?.(summary);
  return summary;
}

/** Relays the stream; resolves with what the answer to the request was (a tool error, an error code). */
export async function relaySse(body: Readable, res: ServerResponse, ctx: RelayContext): Promise<AnswerSummary> {
  const parser = new SseParser(ctx.maxEventChars);
  const watch = new AnswerWatch(ctx);
  let failure: GatewayError | undefined;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      corkForThisTurn(res);
      for (const ev of parser.push(chunk)) {
        watch.see(ev);
        if (!res.write(ev.raw)) await waitForDrain(res, ctx.cancel.signal);
        if (ctx.cancel.aborted) return watch.summary;
      }
    }
  } catch (err) {
    if (ctx.cancel.aborted) return watch.summary;
    failure = ctx.failureOf(err);
  }
  if (ctx.cancel.aborted || res.destroyed) return watch.summary;
  const missing = watch.missingAnswer(failure);
  if (missing !== undefined) res.write(missing);
  const summary = withRefusal(watch.summary, ctx);
  ctx.onSummary?.(summary);
  res.end();
  return summary;
}

function responseTo(data: string, id: JsonRpcId | null): SseResponse | undefined {
  // Cheap pre-check: notifications have no "id" and are most of a long stream.
  return data.includes('"id"') ? answerIn(data, id, true) : undefined;
}
