// Relays an upstream SSE body to the client event by event, as each event completes, honouring the
// client's backpressure. When the stream breaks before the answer to the client's request arrived, the
// client gets a JSON-RPC error for that request instead of a silent end.

import type { Readable } from 'node:stream';
import { GatewayError, gatewayErrorToWire } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { JsonRpcId } from '../protocol/jsonrpc.js';
import { SseParser, formatSseMessage } from '../protocol/sse.js';
import { toGatewayError } from './failures.js';
import { waitForDrain } from '../edge/backpressure.js';
import type { McpExchange } from './upstream.js';

export async function relaySse(body: Readable, ex: McpExchange, requestId: JsonRpcId | null, upstream: string, log: Logger): Promise<void> {
  const parser = new SseParser();
  const res = ex.res;
  // Only a POST that carried a request waits for a final response on its stream.
  let answered = requestId === null;
  let resumable = false;
  let failure: GatewayError | undefined;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      for (const ev of parser.push(chunk)) {
        if (ev.id !== undefined && ev.id !== '') resumable = true;
        if (!answered && ev.data !== undefined && isResponseTo(ev.data, requestId)) answered = true;
        if (!res.write(ev.raw)) await waitForDrain(res, ex.signal);
        if (ex.signal.aborted) return;
      }
    }
  } catch (err) {
    if (ex.signal.aborted) return;
    failure = toGatewayError(err, upstream);
  }
  if (ex.signal.aborted || res.destroyed) return;
  // A 2025-11-25 server may close a stream that carried event ids and expect the client to resume it with
  // GET + Last-Event-ID (2025-11-25/basic/transports.mdx §Sending Messages 6); that is not a failure.
  if (!answered && (failure !== undefined || !resumable)) {
    const err = failure ?? new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${upstream}" ended the stream without answering the request`, upstream);
    log.warn('upstream stream ended without a response', { code: err.code, callId: ex.callId });
    res.write(formatSseMessage(gatewayErrorToWire(err, requestId, ex.callId).body));
  }
  res.end();
}

function isResponseTo(data: string, id: JsonRpcId | null): boolean {
  // Cheap pre-check: notifications have no "id" and are most of a long stream.
  if (!data.includes('"id"')) return false;
  try {
    const msg = JSON.parse(data) as { id?: unknown; result?: unknown; error?: unknown; method?: unknown };
    return msg.id === id && msg.method === undefined && (msg.result !== undefined || msg.error !== undefined);
  } catch {
    return false;
  }
}
