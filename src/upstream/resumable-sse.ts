// Reads an upstream's SSE stream as JSON-RPC messages, and takes the stream up again when the server closes
// the connection without ending the stream. A 2025-11-25 server may do that on purpose ("polling"): it
// sends an event id (a priming event) and a `retry`, closes, and expects the client to come back after
// `retry` ms with a GET carrying `Last-Event-ID` (2025-11-25/basic/transports.mdx §Sending Messages 6,
// §Listening for Messages 4, §Resumability and Redelivery). Without this, every bridged call to such a
// server would fail at its first close.
//
// A stream answering a POSTed request is whole once the response to that request has come; a GET stream
// never is, and is resumed until its reader stops. What bounds the retries: the reader's signal (the call's
// client leaving); a resume the server refuses (answered at once, not retried); a few failed connects in a
// row; a wait that doubles after each connection that brought nothing, so a server that accepts and closes
// at once makes no tight loop; and, for reply streams, the upstream's body timeout counted across
// reconnects, so a server that closes every poll without sending anything cannot hold a call forever.

import type { Readable } from 'node:stream';
import { answerIn, answers, type WholeSse } from '../protocol/whole-sse.js';
import type { Dispatcher, Pool } from 'undici';
// The module object, read at each wait, not a binding taken at import: node:test's mocked clock replaces
// its setTimeout, so the waits between reconnects can be checked in turns of a clock (resumable-sse.test.ts).
import timers from 'node:timers/promises';
import type { JsonRpcId, JsonRpcMessage } from '../protocol/jsonrpc.js';
import { isEventStreamType, MAX_EVENT_CHARS, relayedUpToResponse, type SseEvent, SseParser } from '../protocol/sse.js';
import { batchIn, unbatchedRaw } from '../protocol/sse-batch.js';
import { GatewayError } from '../errors.js';
import type { Cancellation } from '../pipeline/cancellation.js';
import { UpstreamSessionGone } from '../pipeline/ports.js';
import type { CredentialHeaders, UpstreamCredentials } from './credentials.js';
import { toGatewayError } from './failures.js';

/** The reconnection time before the server names one (WHATWG HTML §9.2: user-agent defined, "a few seconds"). */
export const DEFAULT_RETRY_MS = 1_000;
/** A floor under the server's `retry`, so `retry: 0` and a server that closes at once cannot make a tight loop. */
const MIN_RETRY_MS = 50;
/** Reconnects that fail to connect at all, in a row, before the stream is given up. */
const MAX_FAILED_RECONNECTS = 3;
/** The longest wait the doubling reaches, unless the server's own `retry` is longer. */
const MAX_BACKOFF_MS = 30_000;

export interface StreamResumption {
  /** Opens the GET that continues the stream after `lastEventId`; throws when the upstream refuses it. */
  reopen(lastEventId: string, signal: AbortSignal | undefined): Promise<Readable>;
  /** The POSTed request's id; undefined for a GET stream, which is never whole. */
  awaiting?: JsonRpcId;
  /** Stops waiting and reconnecting (the reader's client left). */
  cancel: Cancellation;
  /**
   * Longest time without anything new from the upstream (a message, or an event id not seen before),
   * across reconnects, before the stream is given up.
   */
  idleLimitMs: number;
}

/** The stream's messages, parsed (the bridges and Gatehouse's own reads). */
export async function* readSseMessages(body: Readable, upstream: string, resumption?: StreamResumption, maxEventChars = MAX_EVENT_CHARS): AsyncGenerator<JsonRpcMessage, void, void> {
  let answered = false;
  for await (const ev of readSseEvents(body, upstream, resumption, () => answered, maxEventChars)) {
    if (ev.data === undefined || ev.data === '') continue;
    // A 2025-03-26 server's batch: its messages one by one (protocol/sse-batch.ts).
    const batch = batchIn(ev);
    let messages: JsonRpcMessage[];
    if (batch !== undefined) messages = batch as JsonRpcMessage[];
    else {
      try {
        messages = [JSON.parse(ev.data) as JsonRpcMessage];
      } catch {
        continue; // Not JSON-RPC: nothing a bridge can relay.
      }
    }
    for (const message of messages) {
      if (resumption?.awaiting !== undefined && answers(message, resumption.awaiting, true)) answered = true;
      yield message;
    }
    // The response ends what the request is owed (see readSseText): the rest of the stream is let go.
    if (answered) return;
  }
}

/**
 * The stream's events as text, whole events only (an event cut short by a closed connection is dropped,
 * and comes again on the resumed one), for a relay that passes them on as they are (the pass-through).
 */
export async function* readSseText(body: Readable, upstream: string, resumption: StreamResumption, maxEventChars = MAX_EVENT_CHARS): AsyncGenerator<string, void, void> {
  let answered = false;
  const awaiting = resumption.awaiting;
  for await (const ev of readSseEvents(body, upstream, resumption, () => answered, maxEventChars)) {
    // A 2025-03-26 server's batch goes on as one event per message, which every later step reads
    // (protocol/sse-batch.ts): the audit and the checks see its answer, and the client gets nothing twice.
    const batch = batchIn(ev);
    if (batch !== undefined) {
      if (!answered && awaiting !== undefined) answered = batch.some((m) => answers(m, awaiting, true));
      yield unbatchedRaw(ev);
    } else {
      // Cheap pre-check: notifications have no "id" and are most of a long stream.
      if (!answered && awaiting !== undefined && ev.data !== undefined && ev.data.includes('"id"')) {
        answered = answerIn(ev.data, awaiting, true) !== undefined;
      }
      yield relayedUpToResponse(ev.raw, answered);
    }
    // 2025-11-25/basic/transports.mdx §Sending Messages 6: "After the JSON-RPC response has been sent, the
    // server SHOULD close the SSE stream." One that kept it open held the client's answer open with it (up
    // to its body timeout) until 5 December: the stream ends at the response, and the upstream's is let go.
    if (answered) return;
  }
}

/**
 * Every complete event of the stream, across the connections that resume it; `answered` tells, when a
 * connection ends, whether the stream is whole (the reader has seen the response it waited for).
 */
async function* readSseEvents(body: Readable, upstream: string, resumption: StreamResumption | undefined, answered: () => boolean, maxEventChars: number): AsyncGenerator<SseEvent, void, void> {
  let current: Readable | undefined = body;
  let lastEventId = '';
  let retryMs = DEFAULT_RETRY_MS;
  let failedReconnects = 0;
  /** Connections in a row that brought nothing new: each one doubles the wait before the next. */
  let silentConnections = 0;
  /** When the stream last brought something new: a message, or an event id not seen before. */
  let heardAt = performance.now();
  // Stopped now, not when the upstream next sends something: a consumer that has gone (a client that left,
  // an answer cut at its deadline) may be waiting on an upstream that has fallen silent.
  const stopReading = (): void => void current?.destroy();
  if (resumption !== undefined && !resumption.cancel.aborted) resumption.cancel.onCancel(stopReading);
  try {
    for (;;) {
      let broken: unknown;
      if (current !== undefined) {
        const parser = new SseParser(maxEventChars);
        let heard = false;
        try {
          for await (const chunk of current as AsyncIterable<Buffer>) {
            for (const ev of parser.push(chunk)) {
              // Comments and a repeated priming event keep a connection open, but are no news: a server
              // that only repeats itself is given up after the idle limit, however often it answers.
              if ((ev.data !== undefined && ev.data !== '') || (ev.id !== undefined && ev.id !== lastEventId)) {
                heard = true;
                heardAt = performance.now();
              }
              // An event's id, even an empty one, becomes the stream's last event id (WHATWG HTML §9.2.6).
              if (ev.id !== undefined) lastEventId = ev.id;
              if (ev.retry !== undefined) retryMs = ev.retry;
              yield ev;
            }
          }
        } catch (err) {
          broken = err;
        }
        if (!current.destroyed) current.destroy();
        current = undefined;
        silentConnections = heard ? 0 : silentConnections + 1;
      }
      const whole = answered();
      if (whole || resumption === undefined || lastEventId === '' || resumption.cancel.aborted) {
        if (broken !== undefined && !whole && !resumption?.cancel.aborted) throw toGatewayError(broken, upstream);
        return;
      }
      if (performance.now() - heardAt > resumption.idleLimitMs) {
        throw new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', `Upstream "${upstream}" sent nothing on its resumed stream in time`, upstream);
      }
      const delay = Math.max(retryMs, MIN_RETRY_MS);
      try {
        await timers.setTimeout(Math.min(delay * 2 ** silentConnections, Math.max(delay, MAX_BACKOFF_MS)), undefined, { signal: resumption.cancel.signal });
      } catch {
        return; // aborted: the reader has gone
      }
      try {
        current = await resumption.reopen(lastEventId, resumption.cancel.signal);
        failedReconnects = 0;
      } catch (err) {
        if (resumption.cancel.aborted) return;
        // A refusal (a status) is the server's answer; only a connection that failed is worth another try.
        const error = err instanceof UpstreamSessionGone ? err : toGatewayError(err, upstream);
        const transient = error instanceof GatewayError && (error.code === 'GW_ERR_UPSTREAM_UNREACHABLE' || error.code === 'GW_ERR_UPSTREAM_TIMEOUT');
        if (transient && ++failedReconnects < MAX_FAILED_RECONNECTS) {
          silentConnections++;
          continue;
        }
        throw error;
      }
    }
  } finally {
    resumption?.cancel.offCancel(stopReading);
    // Stopping early (the consumer returned) must release the upstream connection.
    if (current !== undefined && !current.destroyed) current.destroy();
  }
}

/**
 * The GET that continues a stream after `lastEventId` (2025-11-25/basic/transports.mdx §Resumability and
 * Redelivery), with the session's headers and the upstream's own credentials. Throws UpstreamSessionGone
 * for a 404 on a named session, a GatewayError for any other refusal or a failed connection.
 * `bodyTimeout`: undefined keeps the pool's.
 */
export async function reopenStream(
  to: { pool: Pool; path: string; credentials: UpstreamCredentials; upstream: string },
  headers: Record<string, string>,
  lastEventId: string,
  signal: AbortSignal | undefined,
  bodyTimeout?: number,
): Promise<Readable> {
  let res: Dispatcher.ResponseData;
  let auth: CredentialHeaders;
  try {
    auth = to.credentials.current() ?? (await to.credentials.headers());
    res = await to.pool.request({
      path: to.path,
      method: 'GET',
      headers: { accept: 'text/event-stream', ...headers, 'last-event-id': lastEventId, ...auth },
      signal,
      ...(bodyTimeout !== undefined ? { bodyTimeout } : {}),
    });
  } catch (err) {
    throw toGatewayError(err, to.upstream);
  }
  // A 401 is about the gateway's token: drop it so the next request fetches another.
  if (res.statusCode === 401) to.credentials.invalidate(auth);
  if (res.statusCode !== 200 || !isEventStreamType(String(res.headers['content-type'] ?? ''))) {
    await res.body.dump().catch(() => {});
    if (res.statusCode === 404 && headers['mcp-session-id'] !== undefined) throw new UpstreamSessionGone(to.upstream);
    throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${to.upstream}" refused to resume its stream (HTTP ${res.statusCode})`, to.upstream);
  }
  return res.body;
}

/** The session headers a resuming GET carries: the ones its stream's request had. */
export function sessionHeaders(sent: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: Record<string, string> = {};
  const session = sent['mcp-session-id'];
  const version = sent['mcp-protocol-version'];
  if (typeof session === 'string') headers['mcp-session-id'] = session;
  if (typeof version === 'string') headers['mcp-protocol-version'] = version;
  return headers;
}

/**
 * Whether a stream that had all come by the time it was answered holds the response to `requestId`: then
 * there is nothing to resume, and it can go on as it is (the usual short answer).
 */
export function answeredWhole(reading: WholeSse, requestId: JsonRpcId): boolean {
  return reading.answerAt(requestId, true) !== -1;
}

