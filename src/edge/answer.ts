// Writes an Outcome as HTTP: the only place Gatehouse sets a status, headers or a body on the MCP
// endpoint, and the one place `x-gatehouse-call-id` is set. JSON for single messages and refusals, SSE for
// streams (with keep-alives and a cut-off for clients that stop reading), and the upstream's own bytes for
// the pass-through.

import type { ServerResponse } from 'node:http';
import { toWire, tooDeep, type GatewayError, type WireContext } from '../errors.js';
import { jsonOf } from '../protocol/json-text.js';
import type { CallStream, StreamItem } from '../pipeline/call-stream.js';
import type { AnswerHeaders, Outcome } from '../pipeline/outcome.js';
import { ErrorCode } from '../protocol/jsonrpc.js';
import { formatSseJson, isEventStreamType } from '../protocol/sse.js';
import type { Cancellation } from '../pipeline/cancellation.js';
import type { BodySink, RelayBody } from '../pipeline/relay-body.js';
import { failureSummary, NO_TOOL_ERROR, summaryOf, type AnswerSummary } from './answer-summary.js';
import { waitForDrain } from './backpressure.js';
import { corkForThisTurn, relaySse, relayWholeSse } from './sse-relay.js';

export const CALL_ID_HEADER = 'x-gatehouse-call-id';

/** A client this far behind is cut off: it can reconnect, the gateway's memory cannot grow. */
export const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** SSE comments on an idle listen stream, so proxies in between do not time it out. */
export const KEEPALIVE_MS = 15_000;

export const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };

export interface AnswerContext extends WireContext {
  cancel: Cancellation;
  log?: { warn(msg: string, fields?: Record<string, unknown>): void };
  /**
   * Told what the answer was just before its last bytes go to the socket, so whoever publishes the call's
   * end (on the response's close) already knows it.
   */
  onSummary?: (summary: AnswerSummary) => void;
}


/** Writes the whole answer; resolves once it is written or the client has gone. */
export async function writeOutcome(res: ServerResponse, outcome: Outcome, ctx: AnswerContext): Promise<AnswerSummary> {
  switch (outcome.kind) {
    case 'json': {
      const text = jsonOf(outcome.message);
      if (text === undefined) return writeOutcome(res, { kind: 'refused', refusal: { kind: 'failure', error: tooDeep() } }, ctx);
      const summary = summaryOf(outcome.message);
      ctx.onSummary?.(summary);
      sendText(res, outcome.status, text, withCallId(outcome.headers, ctx.callId));
      return summary;
    }
    case 'empty':
      if (res.headersSent) res.destroy();
      else res.writeHead(outcome.status, withCallId(outcome.headers, ctx.callId)).end();
      return NO_TOOL_ERROR;
    case 'refused': {
      const wire = toWire(outcome.refusal, ctx);
      const summary = summaryOf(wire.body);
      ctx.onSummary?.(summary);
      sendJson(res, wire.status, wire.body, withCallId(wire.headers, ctx.callId));
      return summary;
    }
    case 'stream':
      return writeStream(res, outcome.stream, withCallId(outcome.headers, ctx.callId), ctx);
    case 'relay':
      return relay(res, outcome, ctx);
  }
}

/** Drops an answer nobody will read, so its producer hears of it. */
export function discardOutcome(outcome: Outcome): void {
  if (outcome.kind === 'stream') outcome.stream.cancel();
  else if (outcome.kind === 'relay') {
    outcome.body.destroy();
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: AnswerHeaders): void {
  sendText(res, status, JSON.stringify(body), headers);
}

function sendText(res: ServerResponse, status: number, text: string, headers: AnswerHeaders): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function withCallId(headers: AnswerHeaders | undefined, callId: string, without?: string): AnswerHeaders {
  // A plain copy: the spread of objects of many shapes with a computed key showed up in profiles of every answer.
  const out: AnswerHeaders = {};
  if (headers !== undefined) for (const key in headers) if (key !== without) out[key] = headers[key]!;
  out[CALL_ID_HEADER] = callId;
  return out;
}

/**
 * A call's stream stays JSON while nothing precedes the final message; a listen stream opens at once.
 * The client leaving cancels the stream, which is how its producer hears of it.
 */
async function writeStream(res: ServerResponse, stream: CallStream, headers: AnswerHeaders, ctx: AnswerContext): Promise<AnswerSummary> {
  const onClose = (): void => {
    if (!res.writableFinished) stream.cancel();
  };
  res.once('close', onClose);
  let sse = false;
  let keepalive: NodeJS.Timeout | undefined;
  let summary = NO_TOOL_ERROR;
  const openSse = (): void => {
    if (sse) return;
    sse = true;
    res.writeHead(200, { ...headers, ...SSE_HEADERS });
    res.flushHeaders();
    // Comments keep any SSE stream alive through proxies that time out a silent response: a listen stream
    // between its notifications, and a call's between its progress and its answer (until 4 December only
    // the former had them, so a tool quiet for a minute after its first progress was cut by such a proxy).
    keepalive = setInterval(() => keepAlive(res), KEEPALIVE_MS).unref();
  };
  if (stream.mode === 'listen') openSse();
  try {
    for await (const read of stream.read()) {
      let item: StreamItem = read;
      if (res.destroyed) break;
      if ('comment' in item) {
        if (sse) keepAlive(res);
        continue;
      }
      const text = 'message' in item ? jsonOf(item.message) : undefined;
      if ('message' in item && text === undefined) {
        // Too deep to write: the answer is the upstream's failure; a notification before it is left out.
        if (!item.final) continue;
        item = { failure: tooDeep() };
      }
      if ('message' in item && item.final) {
        summary = summaryOf(item.message);
        const refused = stream.refused;
        if (refused !== undefined) summary = { ...summary, refused };
      }
      if (!sse && isFinalAnswer(item)) {
        // Nothing preceded the answer: plain JSON, as a server answering directly would.
        if ('message' in item) {
          ctx.onSummary?.(summary);
          sendText(res, ctx.era === 'modern' ? modernErrorStatus(item.message) : 200, text!, headers);
        } else {
          const wire = toWire({ kind: 'failure', error: item.failure }, { ...ctx, id: stream.requestId });
          summary = failedSummary(wire.body, item.failure, stream);
          ctx.onSummary?.(summary);
          sendJson(res, wire.status, wire.body, { ...headers, ...wire.headers });
        }
        return summary;
      }
      openSse();
      const message = 'message' in item ? item.message : toWire({ kind: 'failure', error: item.failure }, { ...ctx, id: stream.requestId }).body;
      if (!('message' in item)) summary = failedSummary(message, item.failure, stream);
      if (!writeSse(res, formatSseJson(text ?? JSON.stringify(message)))) break;
    }
    if (!sse) {
      // A stream that ended with nothing at all (a listen refused, a producer that gave up): an empty 200.
      if (!res.headersSent) res.writeHead(200, headers);
    }
    ctx.onSummary?.(summary);
    if (!res.destroyed) res.end();
    return summary;
  } finally {
    if (keepalive) clearInterval(keepalive);
  }
}

/**
 * The HTTP status of a modern answer that is one JSON-RPC message: 404 for an unknown method
 * (streamable-http.mdx §Protocol Version Header: MUST), 400 for the transport errors the spec gives one
 * (-32020 header mismatch, -32021 missing client capability, -32022 unsupported version; basic/index.mdx
 * §_meta), 200 for the rest. A bridge or the catalog may produce these from an upstream's answer.
 */
function modernErrorStatus(message: unknown): number {
  const code = (message as { error?: { code?: unknown } }).error?.code;
  if (code === ErrorCode.MethodNotFound) return 404;
  if (code === ErrorCode.HeaderMismatch || code === ErrorCode.MissingClientCapability || code === ErrorCode.UnsupportedProtocolVersion) return 400;
  return 200;
}

/** A failure written as the answer; a stage's (CallStream.refused: a record not kept) carries its stage. */
function failedSummary(wire: unknown, failure: GatewayError, stream: CallStream): AnswerSummary {
  const summary = failureSummary(wire, failure);
  const refused = stream.refused;
  return refused !== undefined && refused.refusal.kind === 'failure' && refused.refusal.error === failure ? { ...summary, refused } : summary;
}

function isFinalAnswer(item: StreamItem): boolean {
  return 'failure' in item || ('message' in item && item.final);
}

/** A keep-alive comment, unless bytes are still on their way to the client, which keep the stream alive themselves. */
function keepAlive(res: ServerResponse): void {
  if (!res.writableNeedDrain) writeSse(res, ': keep-alive\n\n');
}

/**
 * One SSE write; a client that has fallen too far behind is cut off (false). Judged by what is queued
 * before the write, not after it: one message may be larger than the bound (an upstream's events may hold
 * up to its maxMessageBytes, 16 MiB by default), and until 4 December such an answer, written after any
 * progress notification, cut off the client it was for at once, however fast it read. Nothing waits for a
 * drain here (the producer's messages would pile up in the call's stream instead), so what a slow client
 * can make Gatehouse hold is the bound plus one message, as on the HTTP+SSE endpoint (sse-session.ts).
 */
function writeSse(res: ServerResponse, text: string): boolean {
  if (res.destroyed || res.writableEnded) return false;
  if (res.writableLength > MAX_BUFFERED_BYTES) {
    res.destroy();
    return false;
  }
  res.write(text);
  return true;
}

/** The upstream's answer as it came: SSE event by event, anything else chunk by chunk, honouring backpressure. */
async function relay(res: ServerResponse, outcome: Extract<Outcome, { kind: 'relay' }>, ctx: AnswerContext): Promise<AnswerSummary> {
  if (isEventStreamType(outcome.headers['content-type'] ?? '')) {
    // The relay writes whole events, never a declared length; a stream has none anyway. (Left out of the
    // copy rather than deleted from it: a delete turns the object into a slow dictionary for every later use.)
    const headers = withCallId(outcome.headers, ctx.callId, 'content-length');
    headers['x-accel-buffering'] = 'no';
    headers['cache-control'] ??= 'no-cache';
    res.writeHead(outcome.status, headers);
    const relayContext = { ...ctx, requestId: outcome.requestId, upstream: outcome.upstream, failureOf: outcome.failureOf, maxEventChars: outcome.body.maxMessageBytes, refused: outcome.refused };
    const whole = outcome.body.peekWhole();
    const reading = outcome.body.peekWholeSse();
    if (whole !== undefined && reading !== undefined) {
      const summary = relayWholeSse(whole, reading, res, relayContext);
      if (summary !== undefined) {
        outcome.body.dump();
        return summary;
      }
    }
    // Sent at the end of this turn, with whatever events are already at hand.
    corkForThisTurn(res);
    res.flushHeaders();
    return relaySse(outcome.body.readable(), res, relayContext);
  }
  const headers = withCallId(outcome.headers, ctx.callId);
  res.writeHead(outcome.status, headers);
  return copyBody(outcome.body, res, ctx);
}

/** `"isError":true` as the answer's bytes carry it; inside a string it would be escaped, so it cannot match there. */
const IS_ERROR = Buffer.from('"isError":true');
/** The member of a JSON-RPC error; an answer that has it is small, and is parsed for its code. */
const ERROR_MEMBER = Buffer.from('"error":');
/** Larger relayed bodies are not parsed for an error code (a result, almost surely). */
const ERROR_SCAN_MAX = 64 * 1024;

/**
 * The upstream's body, chunk by chunk, pausing the upstream while the client's socket is full. A sink
 * rather than a stream: this runs for every relayed answer, and a stream's events and promises per call
 * cost more than the copy itself.
 */
function copyBody(body: RelayBody, res: ServerResponse, ctx: AnswerContext): Promise<AnswerSummary> {
  return new Promise((resolve) => body.consume(new BodyCopy(body, res, ctx, resolve)));
}

/** copyBody's sink: one object per answer whose methods are shared, rather than a closure per callback. */
class BodyCopy implements BodySink {
  private toolError = false;
  private errorChunks: Buffer[] | undefined;
  private size = 0;

  constructor(
    private readonly body: RelayBody,
    private readonly res: ServerResponse,
    private readonly ctx: AnswerContext,
    private readonly resolve: (summary: AnswerSummary) => void,
  ) {}

  data(chunk: Buffer): boolean {
    this.scan(chunk);
    if (this.res.write(chunk)) return true;
    void waitForDrain(this.res, this.ctx.cancel.signal).then(() => this.body.resume());
    return false;
  }

  end(): void {
    this.finish();
  }

  error(err: Error): void {
    this.finish(err);
  }

  /** The body's one and only chunk, written with the end (one write instead of a write and an end). */
  whole(chunk: Buffer): void {
    this.scan(chunk);
    this.finish(undefined, chunk);
  }

  private scan(chunk: Buffer): void {
    if (!this.toolError && chunk.includes(IS_ERROR)) this.toolError = true;
    // Kept (up to a bound) to read an error's code once whole, when the first bytes name an error member.
    this.size += chunk.length;
    if (this.size === chunk.length && chunk.includes(ERROR_MEMBER)) this.errorChunks = [];
    if (this.errorChunks !== undefined) {
      if (this.size <= ERROR_SCAN_MAX) this.errorChunks.push(chunk);
      else this.errorChunks = undefined;
    }
  }

  private finish(err?: Error, last?: Buffer): void {
    const { res, ctx } = this;
    const summary = this.toolError ? { toolError: true } : this.errorChunks !== undefined && err === undefined ? summaryOf(parsed(Buffer.concat(this.errorChunks))) : NO_TOOL_ERROR;
    // Before the end: the response's close may follow before any promise continuation would.
    ctx.onSummary?.(summary);
    if (err === undefined) res.end(last);
    else {
      if (!ctx.cancel.aborted) ctx.log?.warn('upstream body failed mid-response', { err, callId: ctx.callId });
      res.destroy();
    }
    this.resolve(summary);
  }
}

function parsed(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}

