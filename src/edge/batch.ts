// JSON-RPC batches from 2025-03-26 clients: a POST whose body is an array of messages
// (2025-03-26/basic/transports.mdx §Sending Messages 2; 2025-03-26/basic/index.mdx: implementations MUST
// support receiving batches). Gatehouse unbatches them (GATEWAY-REQUIREMENTS §2, batching): every message
// is a call of its own, with its own call id, front-door checks, policy, audit record, log line and
// metrics, exactly as if it had come alone, and reaches the upstream alone.
//
// The answer follows §Sending Messages 4–5. Only notifications and responses: 202 once each was accepted,
// else the first refusal's status. Any request: an SSE stream (the client must take one) carrying every
// message the calls produce, each request's response among them, as they come; it ends with the last call.
// Notifications and responses are handed on in order, each before anything after it in the batch, as they
// would be if sent one POST at a time; requests run side by side.

import { setMaxListeners } from 'node:events';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { refusalCode, toWire, type Refusal } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { Cancellation } from '../pipeline/cancellation.js';
import type { CallContext } from '../pipeline/context.js';
import { publishRefused } from '../pipeline/events.js';
import { refusedRequest } from './refused-request.js';
import type { Outcome } from '../pipeline/outcome.js';
import { admitPost, MAX_BATCH_MESSAGES } from '../protocol/front-door.js';
import { classifyMessage, ErrorCode, errorResponse, idOf, type Classified } from '../protocol/jsonrpc.js';
import { discardOutcome, KEEPALIVE_MS, SSE_HEADERS } from './answer.js';
import { recordWrittenFailure, recordWrittenRefusal } from './answer-summary.js';
import { waitForDrain } from './backpressure.js';
import type { CallRecord, EdgeCore, ReceivedBatch } from './edge-core.js';
import { deliverOutcome, type Delivered, type MessageOut } from './sse-outcome.js';

export interface BatchRequest {
  headers: IncomingHttpHeaders;
  clientAddress: string;
  /** The legacy session the request names, already admitted for the caller. */
  session: { id: string; capabilities: Record<string, unknown> } | undefined;
  /** Cancelled when the client leaves before the answer is complete: every call of the batch follows it. */
  cancel: Cancellation;
  /** A message was answered 404 for the session it names: the session is over, as for a request sent alone. */
  sessionGone(): void;
}

export interface BatchDeps {
  /** A credential inside a message is refused (as for a message sent alone). */
  checkMessage(message: unknown): { ok: boolean; refusal?: Refusal } | undefined;
  log: Logger;
}

type Message = Extract<Classified, { ok: true }>;

export async function answerBatch(core: EdgeCore, deps: BatchDeps, res: ServerResponse, received: ReceivedBatch, request: BatchRequest): Promise<void> {
  const elements = received.batch.map(classifyElement);
  const answersOnStream = elements.some((e) => e.ok && e.kind === 'request');
  // Every call of the batch follows the client's signal, and a slow client's writes wait on it too: more
  // listeners than Node's default ten, none of them a leak.
  setMaxListeners(2 * MAX_BATCH_MESSAGES + 8, request.cancel.signal);
  const stream = answersOnStream ? openStream(res, request.cancel) : undefined;
  const calls: Array<Promise<void>> = [];
  /** Without a stream: the first message that was not accepted decides the status. */
  let refusedWith: { status: number; body: unknown } | undefined;
  const noteSession = (delivered: MessageDelivered): MessageDelivered => {
    if (delivered.status === 404 && request.session !== undefined) request.sessionGone();
    return delivered;
  };
  for (const element of elements) {
    // A client that has left is not answered: what it sent after that point is not started.
    if (request.cancel.aborted) break;
    if (!element.ok) {
      // JSON-RPC 2.0 §6: an element that is no message gets an error response of its own, with a null id.
      const body = errorResponse(null, element.code, element.message);
      if (stream) await stream.send(JSON.stringify(body));
      else refusedWith ??= { status: 400, body };
      continue;
    }
    const call = runMessage(core, deps, received, request, element, stream).then(noteSession);
    if (element.kind === 'request') {
      calls.push(call.then(() => undefined));
      continue;
    }
    const delivered = await call;
    if (delivered.status >= 300 && refusedWith === undefined) refusedWith = { status: delivered.status, body: delivered.body ?? errorResponse(null, ErrorCode.InvalidRequest, 'Invalid request') };
  }
  await Promise.all(calls);
  if (stream) return stream.end();
  if (request.cancel.aborted) return;
  if (res.headersSent || res.destroyed) return;
  if (refusedWith === undefined) return void res.writeHead(202).end();
  const text = JSON.stringify(refusedWith.body);
  res.writeHead(refusedWith.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

/** A batch element as a message, or why it is not one (a nested array is not a message either). */
function classifyElement(element: unknown): Classified {
  if (Array.isArray(element)) return { ok: false, code: ErrorCode.InvalidRequest, message: 'Invalid request: a batch element must be a JSON-RPC object, not an array' };
  return classifyMessage(element);
}

/** What one message's call ended with, and, for a refused notification or response, the error it earned. */
interface MessageDelivered extends Delivered {
  body?: unknown;
}

/** One message of the batch, through the same checks and pipeline as a message sent alone. */
async function runMessage(core: EdgeCore, deps: BatchDeps, received: ReceivedBatch, request: BatchRequest, element: Message, stream: MessageOut | undefined): Promise<MessageDelivered> {
  const call = core.startCall('POST', false);
  const { record } = call;
  const { message, kind } = element;
  const id = kind === 'request' ? idOf(message) : null;
  const method = 'method' in message ? message.method : undefined;
  record.era = 'legacy';
  record.subject = received.principal.subject;
  if (method !== undefined) record.method = method;
  let delivered: MessageDelivered = { status: 500, aborted: true, toolError: false };
  try {
    const outcome = await outcomeOf(core, deps, received, request, element, record);
    if (stream) delivered = await deliverOutcome(stream, outcome, { id, callId: record.callId, log: deps.log });
    else delivered = settle(outcome, record.callId);
    if (delivered.toolError) record.toolError = true;
    if (delivered.errorCode !== undefined) record.rpcCode = delivered.errorCode;
    // A failure written on the batch's stream once this message's answer had begun (the upstream broke it
    // off): the call ends as that failure, with its code and stage, as on the other edges.
    if (delivered.failure !== undefined) recordWrittenFailure(record, delivered.failure, core.token);
    // A stage's refusal written in place of a streamed or relayed answer: the call ends refused by that stage.
    if (delivered.refused !== undefined) recordWrittenRefusal(record, delivered.refused);
  } catch (err) {
    deps.log.error('unhandled error in a batch', { err, callId: record.callId });
    if (stream) await stream.send(JSON.stringify(errorResponse(id, ErrorCode.InternalError, 'Internal gateway error'))).catch(() => false);
  } finally {
    call.done(delivered.status, delivered.aborted);
  }
  return delivered;
}

async function outcomeOf(core: EdgeCore, deps: BatchDeps, received: ReceivedBatch, request: BatchRequest, element: Message, record: CallRecord): Promise<Outcome> {
  const { message, kind } = element;
  const method = 'method' in message ? message.method : undefined;
  if (method === 'initialize') {
    // 2025-03-26/basic/lifecycle.mdx §Initialization: the initialize request MUST NOT be part of a batch.
    return refusedAt(core, deps, record, request, 'admission', { kind: 'transport', code: 'batch', status: 400, rpcCode: ErrorCode.InvalidRequest, message: 'Invalid request: initialize must not be part of a batch; send it alone' });
  }
  const misplaced = deps.checkMessage(message);
  if (misplaced !== undefined && !misplaced.ok && misplaced.refusal !== undefined) return refusedAt(core, deps, record, request, 'auth', misplaced.refusal);
  const admitted = admitPost(request.headers, kind, message);
  if (!admitted.ok) return refusedAt(core, deps, record, request, 'admission', admitted.refusal);
  // The upstream gets this message alone, as the bytes of its own JSON.
  const body = Buffer.from(JSON.stringify(message));
  const traced = core.traced(request.headers, { principal: received.principal, message, kind, id: idOf(message), body, declared: {}, ...(method !== undefined ? { method } : {}) });
  const ctx: CallContext = {
    callId: record.callId, edge: core.token, receivedAt: record.started, httpMethod: 'POST', headers: request.headers, clientAddress: request.clientAddress, body: traced.body,
    message, kind, ...(method !== undefined ? { method } : {}), era: 'legacy', version: admitted.version, cancel: new Cancellation(request.cancel.signal), acceptsSse: true,
    principal: received.principal, clientCapabilities: request.session?.capabilities ?? {},
    ...(request.session !== undefined ? { sessionId: request.session.id } : {}),
    ...(traced.trace ? { trace: traced.trace } : {}),
  };
  return core.runCall(record, ctx);
}

/** A refusal made before the pipeline, kept on the call's record and published as the edge's own are, with the batch request's trace. */
function refusedAt(core: EdgeCore, deps: BatchDeps, record: CallRecord, batch: BatchRequest, stage: 'admission' | 'auth', refusal: Refusal): Outcome {
  record.refusal = refusalCode(refusal);
  record.stage = stage;
  const refused = refusedRequest(record, batch.headers);
  publishRefused({ callId: record.callId, edge: core.token }, stage, refusal, refused);
  deps.log.info('request refused', { callId: record.callId, reason: record.refusal, batch: true, traceId: refused.trace?.traceId ?? refused.spanTraceId });
  return { kind: 'refused', refusal, stage };
}

/** A notification's or response's outcome, where no stream carries answers: its status, and its error when refused. */
function settle(outcome: Outcome, callId: string): MessageDelivered {
  switch (outcome.kind) {
    case 'refused': {
      const wire = toWire(outcome.refusal, { era: 'legacy', id: null, callId });
      return { status: wire.status, aborted: false, toolError: false, body: wire.body, errorCode: wire.body.error?.code };
    }
    case 'json':
      return { status: outcome.status, aborted: false, toolError: false, ...(outcome.status >= 300 ? { body: outcome.message } : {}) };
    case 'empty':
      return { status: outcome.status, aborted: false, toolError: false };
    default:
      // An upstream that answered a notification with a body or a stream: accepted, and nothing to relay.
      discardOutcome(outcome);
      return { status: outcome.kind === 'relay' ? outcome.status : 200, aborted: false, toolError: false };
  }
}

/**
 * The batch's SSE answer: each message one `data` event, written as it comes; waits while the client is
 * slow. Comments keep it alive while the calls run, as on any other stream of Gatehouse's.
 */
function openStream(res: ServerResponse, cancel: Cancellation): MessageOut & { end(): void } {
  res.writeHead(200, SSE_HEADERS);
  res.flushHeaders();
  const keepalive = setInterval(() => {
    if (!res.destroyed && !res.writableEnded && !res.writableNeedDrain) res.write(': keep-alive\n\n');
  }, KEEPALIVE_MS).unref();
  res.once('close', () => clearInterval(keepalive));
  return {
    get signal() {
      return cancel.signal;
    },
    async send(json: string): Promise<boolean> {
      if (res.destroyed || res.writableEnded) return false;
      if (!res.write(`event: message\ndata: ${json}\n\n`)) await waitForDrain(res, cancel.signal);
      return !res.destroyed;
    },
    end() {
      clearInterval(keepalive);
      if (!res.writableEnded) res.end();
    },
  };
}
