// Relays an upstream SSE body to the client event by event, as each event completes, honouring the
// client's backpressure. When the stream breaks before the answer to the client's request arrived, the
// client gets a JSON-RPC error for that request instead of a silent end.

import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { GatewayError, toWire, type WireContext } from '../errors.js';
import type { JsonRpcId } from '../protocol/jsonrpc.js';
import { SseParser, formatSseMessage } from '../protocol/sse.js';
import { summaryOf, type AnswerSummary } from './answer-summary.js';
import { waitForDrain } from './backpressure.js';
import type { Cancellation } from '../pipeline/cancellation.js';

export interface RelayContext extends WireContext {
  cancel: Cancellation;
  requestId: JsonRpcId | null;
  upstream: string;
  /** What a broken body means, told by the adapter that knows its transport's errors. */
  failureOf(err: unknown): GatewayError;
  log?: { warn(msg: string, fields?: Record<string, unknown>): void };
  onSummary?: (summary: AnswerSummary) => void;
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
 * A stream that had all come, and ended, by the time it was answered (a short answer's usual case: its
 * headers, one event and its end in one read): its bytes go on in one write, read once for the summary,
 * without the Readable and async iteration the streaming relay takes (which doubled the CPU of such a
 * call; bench/README.md §SSE answers). Undefined when its last event is cut short: the streaming relay
 * then drops it, as it always has.
 */
export function relayWholeSse(bytes: Buffer, res: ServerResponse, ctx: RelayContext): AnswerSummary | undefined {
  const parser = new SseParser();
  const events = parser.push(bytes);
  if (parser.remainder !== '') return undefined;
  let answered = ctx.requestId === null;
  let summary: AnswerSummary = { toolError: false };
  let resumable = false;
  for (const ev of events) {
    if (ev.id !== undefined && ev.id !== '') resumable = true;
    if (!answered && ev.data !== undefined) {
      const response = responseTo(ev.data, ctx.requestId);
      if (response !== undefined) {
        answered = true;
        summary = summaryOf(response);
      }
    }
  }
  if (!answered && !resumable) {
    const err = new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${ctx.upstream}" ended the stream without answering the request`, ctx.upstream);
    ctx.log?.warn('upstream stream ended without a response', { code: err.code, callId: ctx.callId });
    const wire = toWire({ kind: 'failure', error: err }, { ...ctx, id: ctx.requestId }).body;
    res.end(Buffer.concat([bytes, Buffer.from(formatSseMessage(wire))]));
    summary = summaryOf(wire);
  } else {
    // With the headers, in one write.
    res.end(bytes);
  }
  ctx.onSummary?.(summary);
  return summary;
}

/** Relays the stream; resolves with what the answer to the request was (a tool error, an error code). */
export async function relaySse(body: Readable, res: ServerResponse, ctx: RelayContext): Promise<AnswerSummary> {
  const parser = new SseParser();
  // Only a POST that carried a request waits for a final response on its stream.
  let answered = ctx.requestId === null;
  let summary: AnswerSummary = { toolError: false };
  let resumable = false;
  let failure: GatewayError | undefined;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      corkForThisTurn(res);
      for (const ev of parser.push(chunk)) {
        if (ev.id !== undefined && ev.id !== '') resumable = true;
        if (!answered && ev.data !== undefined) {
          const response = responseTo(ev.data, ctx.requestId);
          if (response !== undefined) {
            answered = true;
            summary = summaryOf(response);
          }
        }
        if (!res.write(ev.raw)) await waitForDrain(res, ctx.cancel.signal);
        if (ctx.cancel.aborted) return summary;
      }
    }
  } catch (err) {
    if (ctx.cancel.aborted) return summary;
    failure = ctx.failureOf(err);
  }
  if (ctx.cancel.aborted || res.destroyed) return summary;
  // A 2025-11-25 server may close a stream that carried event ids and expect the client to resume it with
  // GET + Last-Event-ID (2025-11-25/basic/transports.mdx §Sending Messages 6); that is not a failure.
  if (!answered && (failure !== undefined || !resumable)) {
    const err = failure ?? new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${ctx.upstream}" ended the stream without answering the request`, ctx.upstream);
    ctx.log?.warn('upstream stream ended without a response', { code: err.code, callId: ctx.callId });
    const wire = toWire({ kind: 'failure', error: err }, { ...ctx, id: ctx.requestId }).body;
    res.write(formatSseMessage(wire));
    summary = summaryOf(wire);
  }
  ctx.onSummary?.(summary);
  res.end();
  return summary;
}

function responseTo(data: string, id: JsonRpcId | null): { result?: { isError?: unknown } } | undefined {
  // Cheap pre-check: notifications have no "id" and are most of a long stream.
  if (!data.includes('"id"')) return undefined;
  try {
    const msg = JSON.parse(data) as { id?: unknown; result?: { isError?: unknown }; error?: unknown; method?: unknown };
    return msg.id === id && msg.method === undefined && (msg.result !== undefined || msg.error !== undefined) ? msg : undefined;
  } catch {
    return undefined;
  }
}
