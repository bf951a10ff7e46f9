// An Outcome written into a call stream that has already begun: for a stage that sends messages of its own
// before the call goes on (a confirmation asked on the legacy client's stream), whatever the stages after
// it answer (a refusal, one JSON message, a stream, or an upstream's relayed bytes) continues that stream.

import { GatewayError, refusalOfTool, toWire } from '../errors.js';
import type { JsonRpcMessage, JsonRpcResponse } from '../protocol/jsonrpc.js';
import { isEventStreamType, SseParser } from '../protocol/sse.js';
import type { CallStream } from './call-stream.js';
import type { CallContext } from './context.js';
import type { Outcome } from './outcome.js';

export async function pipeOutcome(outcome: Outcome, out: CallStream, ctx: CallContext): Promise<void> {
  switch (outcome.kind) {
    case 'refused':
      return out.finish(toWire(refusalOfTool(outcome.refusal, ctx), { era: ctx.era, id: out.requestId, callId: ctx.callId }).body);
    case 'json':
      if (isResponse(outcome.message)) return out.finish(outcome.message);
      return out.fail(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', 'The call was answered without a response'));
    case 'empty':
      return out.fail(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `The call was answered HTTP ${outcome.status} without a response`));
    case 'stream':
      out.onClose(() => outcome.stream.cancel());
      for await (const item of outcome.stream.read()) {
        if ('comment' in item) out.comment();
        else if ('failure' in item) return out.fail(item.failure);
        else if (item.final) return out.finish(item.message as JsonRpcResponse);
        else out.push(item.message);
      }
      return out.fail(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', 'The call ended without a response'));
    case 'relay':
      return pipeRelay(outcome, out);
  }
}

async function pipeRelay(outcome: Extract<Outcome, { kind: 'relay' }>, out: CallStream): Promise<void> {
  out.onClose(() => outcome.body.destroy());
  const sse = isEventStreamType(outcome.headers['content-type'] ?? '');
  const parser = new SseParser(outcome.body.maxMessageBytes);
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of outcome.body.readable() as AsyncIterable<Buffer>) {
      if (!sse) {
        chunks.push(chunk);
        continue;
      }
      for (const event of parser.push(chunk)) {
        if (event.data === undefined || event.data === '') continue;
        const message = JSON.parse(event.data) as JsonRpcMessage;
        if (isResponse(message) && message.id === outcome.requestId) return out.finish(message);
        out.push(message);
      }
    }
    if (!sse) {
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as JsonRpcMessage;
      if (isResponse(message)) return out.finish(message);
    }
    return out.fail(new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${outcome.upstream}" answered HTTP ${outcome.status} without a response`, outcome.upstream));
  } catch (err) {
    return out.fail(outcome.failureOf(err));
  }
}

function isResponse(m: JsonRpcMessage): m is JsonRpcResponse {
  return !('method' in m) && 'id' in m;
}
