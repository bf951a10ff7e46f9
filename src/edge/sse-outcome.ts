// Writes an Outcome onto an event stream shared by several calls, a 2024-11-05 session's or the answer to a
// 2025-03-26 batch (batch.ts): each JSON-RPC message of the answer becomes one `message` event
// (2024-11-05/basic/transports.mdx §HTTP with SSE: "Server messages are sent as SSE message events"),
// whether the pipeline produced one JSON message, a stream, a refusal or an upstream's own bytes. There is
// no HTTP status per call to carry anything, so whatever answers a request reaches the client as a
// JSON-RPC response for its id, and a request is never left without one.

import { GatewayError, toWire, tooDeep, type WireContext } from '../errors.js';
import type { CallStream, StreamRefusal } from '../pipeline/call-stream.js';
import type { Outcome } from '../pipeline/outcome.js';
import type { JsonRpcId } from '../protocol/jsonrpc.js';
import { isEventStreamType, type SseEvent, SseParser } from '../protocol/sse.js';
import { CLIENT_CLOSED_STATUS } from '../pipeline/events.js';
import { discardOutcome } from './answer.js';
import { jsonOf } from '../protocol/json-text.js';

/** Where the messages go: one SSE session's stream. */
export interface MessageOut {
  readonly signal: AbortSignal;
  /** Writes one message (JSON text); resolves false once the stream is gone. Waits while the client is slow. */
  send(json: string): Promise<boolean>;
}

export interface DeliverContext {
  /** The id of the request answered, or null (a notification, a client's response, a listen stream). */
  id: JsonRpcId | null;
  callId: string;
  /** Sees the response to `id` before it is written (initialize: the negotiated version). */
  onResponse?(response: Record<string, unknown>): void;
  /** Sees each event of an upstream's stream relayed (a listen stream's, to resume it after a close). */
  onEvent?(ev: SseEvent): void;
  log: { debug(msg: string, fields?: Record<string, unknown>): void; warn(msg: string, fields?: Record<string, unknown>): void };
}

/** How the answer went, in the terms of the edge's `end` event. */
export interface Delivered {
  /** The HTTP status the Streamable HTTP edge would have answered with. */
  status: number;
  aborted: boolean;
  toolError: boolean;
  /** A JSON-RPC error answered the request (its code), or undefined. */
  errorCode?: number;
  /** The failure written as the answer once the answer had begun (answer-summary.ts recordWrittenFailure). */
  failure?: GatewayError;
  /** A stage's refusal written as a stream's final message (answer-summary.ts recordWrittenRefusal). */
  refused?: StreamRefusal;
}

export async function deliverOutcome(out: MessageOut, outcome: Outcome, ctx: DeliverContext): Promise<Delivered> {
  if (out.signal.aborted) {
    // The connection closed before its answer: nothing of it reached the client.
    discardOutcome(outcome);
    return { status: CLIENT_CLOSED_STATUS, aborted: true, toolError: false };
  }
  const wire: WireContext = { era: 'legacy', id: ctx.id, callId: ctx.callId };
  const answer = new Answer(out, ctx);
  switch (outcome.kind) {
    case 'json':
      await answer.message(outcome.message);
      return answer.result(outcome.status);
    case 'empty':
      return answer.result(outcome.status);
    case 'refused': {
      const w = toWire(outcome.refusal, wire);
      await answer.message(w.body);
      return answer.result(w.status);
    }
    case 'stream':
      return answer.result(await streamed(answer, outcome.stream, wire));
    case 'relay': {
      const status = await relayed(answer, outcome, wire, ctx.onEvent);
      // A stage's refusal written in place of the answer event (final-answer.ts), once the body has been read.
      answer.refused ??= outcome.refused?.value;
      return answer.result(status);
    }
  }
}

/** The messages of one answer as they are written, and what they said. */
class Answer {
  answered = false;
  toolError = false;
  errorCode: number | undefined;
  /** The status of a failure that replaced the answer (one too deep to write), in place of the outcome's. */
  private status: number | undefined;
  /** The failure written as the answer, when one was. */
  failure: GatewayError | undefined;
  /** The refusal a stage put in place of a stream's answer (CallStream.refused), when one did. */
  refused: StreamRefusal | undefined;
  private gone = false;
  /** Some message of the answer reached the stream: the answer had begun, as a response whose headers went out. */
  private sent = false;

  constructor(readonly out: MessageOut, private readonly ctx: DeliverContext) {}

  /** Writes a message (parsed or as text); false once the stream is gone. */
  async message(message: unknown, text?: string): Promise<boolean> {
    if (this.gone) return false;
    let m = message as { id?: unknown; method?: unknown; result?: { isError?: unknown }; error?: { code?: unknown } };
    const isResponse = m.method === undefined && (m.result !== undefined || m.error !== undefined);
    if (isResponse && (this.ctx.id === null || m.id !== this.ctx.id)) {
      // A response that answers nothing the client asked (an error for a notification): the old transport
      // has no status line to put it on, and a client would only report an unknown id.
      this.ctx.log.debug('answer without a request to match dropped', { callId: this.ctx.callId, id: m.id ?? null });
      return true;
    }
    text ??= jsonOf(message);
    if (text === undefined) {
      // Nested too deeply to write again (protocol/json-text.ts), as the Streamable HTTP edge says it: the
      // response is the upstream's failure, anything before it is left out.
      if (!isResponse) return true;
      this.failure = tooDeep();
      const w = toWire({ kind: 'failure', error: this.failure }, { era: 'legacy', id: this.ctx.id, callId: this.ctx.callId });
      this.status = w.status;
      m = w.body as typeof m;
      message = w.body;
      text = JSON.stringify(w.body);
    }
    if (isResponse) {
      this.answered = true;
      this.toolError = m.result?.isError === true;
      if (typeof m.error?.code === 'number') this.errorCode = m.error.code;
      this.ctx.onResponse?.(message as Record<string, unknown>);
    }
    if (!(await this.out.send(text))) this.gone = true;
    else this.sent = true;
    return !this.gone;
  }

  /** A request must hear something: a failure rendered as the error response for its id. */
  async failIfUnanswered(err: GatewayError, wire: WireContext): Promise<number | undefined> {
    if (this.answered || this.ctx.id === null || this.gone || this.out.signal.aborted) return undefined;
    this.ctx.log.warn('upstream answer ended without a response', { code: err.code, callId: this.ctx.callId });
    this.failure = err;
    const w = toWire({ kind: 'failure', error: err }, wire);
    await this.message(w.body);
    return w.status;
  }

  result(status: number): Delivered {
    const aborted = this.gone || this.out.signal.aborted;
    // Gone before any of it was written: the client got no answer at all (as a response closed before its headers).
    return { status: aborted && !this.sent ? CLIENT_CLOSED_STATUS : (this.status ?? status), aborted, toolError: this.toolError, ...(this.errorCode !== undefined ? { errorCode: this.errorCode } : {}), ...(this.failure !== undefined ? { failure: this.failure } : {}), ...(this.refused !== undefined ? { refused: this.refused } : {}) };
  }
}

async function streamed(answer: Answer, stream: CallStream, wire: WireContext): Promise<number> {
  const cancel = (): void => stream.cancel();
  const signal = answer.out.signal;
  signal.addEventListener('abort', cancel, { once: true });
  let status = 200;
  try {
    for await (const item of stream.read()) {
      // The session keeps its own stream alive; a producer's keep-alive has nothing to add.
      if ('comment' in item) continue;
      if ('failure' in item) {
        answer.failure = item.failure;
        // A stage's failure in place of the answer (a record not kept): recorded with its stage.
        const refused = stream.refused;
        if (refused !== undefined && refused.refusal.kind === 'failure' && refused.refusal.error === item.failure) answer.refused = refused;
        const w = toWire({ kind: 'failure', error: item.failure }, { ...wire, id: stream.requestId });
        status = w.status;
        if (!(await answer.message(w.body))) break;
        continue;
      }
      if (item.final && stream.refused !== undefined) answer.refused = stream.refused;
      if (!(await answer.message(item.message))) break;
    }
  } finally {
    signal.removeEventListener('abort', cancel);
  }
  return status;
}

/** The upstream's own answer: SSE event by event, or one JSON body (bounded) reframed as one event. */
async function relayed(answer: Answer, outcome: Extract<Outcome, { kind: 'relay' }>, wire: WireContext, onEvent?: (ev: SseEvent) => void): Promise<number> {
  const signal = answer.out.signal;
  const events = isEventStreamType(outcome.headers['content-type'] ?? '') ? outcome.body.readable() : undefined;
  // A stream read through its view is stopped through the view (which drops the body too). A body dropped
  // alone told its view nothing, and the loop below waited on it for good: until 5 December every SSE
  // connection whose listen stream was relayed left that wait, and the listen call, open when it closed. A
  // dropped body now tells its consumer (BodyDropped), which also ends the collect() below.
  const destroy = (): void => void (events !== undefined ? events.destroy() : outcome.body.destroy());
  signal.addEventListener('abort', destroy, { once: true });
  try {
    if (events !== undefined) {
      const parser = new SseParser(outcome.body.maxMessageBytes);
      try {
        for await (const chunk of events as AsyncIterable<Buffer>) {
          for (const ev of parser.push(chunk)) {
            onEvent?.(ev);
            if (ev.data === undefined || ev.data === '' || (ev.event !== undefined && ev.event !== 'message')) continue;
            const parsed = parseJson(ev.data);
            if (parsed === undefined) continue;
            // A 2025-03-26 server's batch (what its GET stream relays as it came): 2024-11-05 has none, so
            // each of its messages is an event of its own (protocol/sse-batch.ts).
            if (Array.isArray(parsed)) {
              for (const message of parsed) if (isMessage(message) && !(await answer.message(message))) return outcome.status;
              continue;
            }
            if (!(await answer.message(parsed, ev.data.includes('\n') ? undefined : ev.data))) return outcome.status;
          }
        }
      } catch (err) {
        if (signal.aborted) return outcome.status;
        return (await answer.failIfUnanswered(outcome.failureOf(err), wire)) ?? outcome.status;
      }
      await answer.failIfUnanswered(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${outcome.upstream}" ended the stream without answering the request`, outcome.upstream), wire);
      return outcome.status;
    }
    let text: string;
    try {
      text = (await outcome.body.collect()).toString('utf8');
    } catch (err) {
      if (signal.aborted) return outcome.status;
      return (await answer.failIfUnanswered(err instanceof GatewayError ? err : outcome.failureOf(err), wire)) ?? outcome.status;
    }
    const parsed = text.trim() === '' ? undefined : parseJson(text);
    for (const message of Array.isArray(parsed) ? parsed.filter(isMessage) : parsed === undefined ? [] : [parsed]) {
      if (!(await answer.message(message))) return outcome.status;
    }
    await answer.failIfUnanswered(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${outcome.upstream}" answered HTTP ${outcome.status} without a JSON-RPC response`, outcome.upstream), wire);
    return outcome.status;
  } finally {
    signal.removeEventListener('abort', destroy);
  }
}

function parseJson(text: string): unknown {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' ? v : undefined;
  } catch {
    return undefined;
  }
}

/** An element of a batch that can be a JSON-RPC message (an object); anything else is left out. */
function isMessage(v: unknown): v is object {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
