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
import { setTimeout as sleep } from 'node:timers/promises';
import type { JsonRpcId, JsonRpcMessage } from '../protocol/jsonrpc.js';
import { SseParser } from '../protocol/sse.js';
import { GatewayError } from '../errors.js';
import type { Cancellation } from '../pipeline/cancellation.js';
import { UpstreamSessionGone } from '../pipeline/ports.js';
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
  /** Longest time without a byte from the upstream, across reconnects, before the stream is given up. */
  idleLimitMs: number;
}

export async function* readSseMessages(body: Readable, upstream: string, resumption?: StreamResumption): AsyncGenerator<JsonRpcMessage, void, void> {
  let current: Readable | undefined = body;
  let lastEventId = '';
  let retryMs = DEFAULT_RETRY_MS;
  let answered = false;
  let failedReconnects = 0;
  /** Connections in a row that brought not a byte: each one doubles the wait before the next. */
  let silentConnections = 0;
  let heardAt = performance.now();
  try {
    for (;;) {
      let broken: unknown;
      if (current !== undefined) {
        const parser = new SseParser();
        let heard = false;
        try {
          for await (const chunk of current as AsyncIterable<Buffer>) {
            heard = true;
            heardAt = performance.now();
            for (const ev of parser.push(chunk)) {
              // An event's id, even an empty one, becomes the stream's last event id (WHATWG HTML §9.2.6).
              if (ev.id !== undefined) lastEventId = ev.id;
              if (ev.retry !== undefined) retryMs = ev.retry;
              if (ev.data === undefined || ev.data === '') continue;
              let message: JsonRpcMessage;
              try {
                message = JSON.parse(ev.data) as JsonRpcMessage;
              } catch {
                continue; // Not JSON-RPC: nothing a bridge can relay.
              }
              if (resumption?.awaiting !== undefined && isResponseTo(message, resumption.awaiting)) answered = true;
              yield message;
            }
          }
        } catch (err) {
          broken = err;
        }
        if (!current.destroyed) current.destroy();
        current = undefined;
        silentConnections = heard ? 0 : silentConnections + 1;
      }
      if (answered || resumption === undefined || lastEventId === '' || resumption.cancel.aborted) {
        if (broken !== undefined && !answered && !resumption?.cancel.aborted) throw toGatewayError(broken, upstream);
        return;
      }
      if (performance.now() - heardAt > resumption.idleLimitMs) {
        throw new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', `Upstream "${upstream}" sent nothing on its resumed stream in time`, upstream);
      }
      const delay = Math.max(retryMs, MIN_RETRY_MS);
      try {
        await sleep(Math.min(delay * 2 ** silentConnections, Math.max(delay, MAX_BACKOFF_MS)), undefined, { signal: resumption.cancel.signal });
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
    // Stopping early (the consumer returned) must release the upstream connection.
    if (current !== undefined && !current.destroyed) current.destroy();
  }
}

function isResponseTo(message: JsonRpcMessage, id: JsonRpcId): boolean {
  const m = message as { id?: unknown; method?: unknown; result?: unknown; error?: unknown };
  return m.id === id && m.method === undefined && (m.result !== undefined || m.error !== undefined);
}
