// The output stage, for tools/call: the final result's `structuredContent` against the tool's
// outputSchema (tools.mdx §Output Schema: servers MUST conform, clients SHOULD validate), per
// `tools.outputValidation`: `warn` logs, `enforce` replaces the result with an `invalid_output` refusal.
// Relayed bytes are watched as they pass and left as they are unless a result must be replaced.

import { Transform, type Readable } from 'node:stream';
import { toWire } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { CallStream, type StreamItem } from '../pipeline/call-stream.js';
import { publishRefused } from '../pipeline/events.js';
import type { Outcome } from '../pipeline/outcome.js';
import type { Stage } from '../pipeline/stage.js';
import type { JsonRpcId, JsonRpcMessage, JsonRpcResponse } from '../protocol/jsonrpc.js';
import { formatSseMessage, SseParser } from '../protocol/sse.js';
import { invalidOutput, type ArgumentSchemas } from './argument-schemas.js';

export type OutputValidation = 'enforce' | 'warn' | 'off';

/** The checker for one call: undefined when the result conforms, else the result to answer instead (or the same, under `warn`). */
type Checker = (response: JsonRpcResponse) => JsonRpcResponse | undefined;

export function compileOutputStage(mode: OutputValidation, schemas: ArgumentSchemas, log: Logger): Stage {
  return {
    name: 'output',
    applies: (ctx) => mode !== 'off' && ctx.method === 'tools/call' && ctx.route?.outputSchema !== undefined,
    async run(ctx, next) {
      const outcome = await next(ctx);
      const route = ctx.route!;
      const check: Checker = (response) => {
        const result = response.result;
        if (!result || result.isError === true || result.resultType === 'input_required') return undefined;
        const problems = schemas.checkOutput(route.publicName, route.outputSchema, result.structuredContent);
        if (!problems) return undefined;
        log.warn('tool output does not match its outputSchema', { tool: route.publicName, upstream: route.upstream, problems, enforced: mode === 'enforce', callId: ctx.callId });
        if (mode !== 'enforce') return undefined;
        const refusal = invalidOutput(route.publicName, problems);
        publishRefused(ctx, 'output', refusal);
        return toWire(refusal, { era: ctx.era, id: response.id, callId: ctx.callId }).body;
      };
      return checked(outcome, check);
    },
  };
}

function checked(outcome: Outcome, check: Checker): Outcome {
  switch (outcome.kind) {
    case 'json': {
      const replaced = isResponse(outcome.message) ? check(outcome.message) : undefined;
      return replaced ? { ...outcome, message: replaced } : outcome;
    }
    case 'stream':
      return { ...outcome, stream: checkedStream(outcome.stream, check) };
    case 'relay': {
      // The body may change length when a result is replaced: no declared length for it.
      const { 'content-length': _length, ...headers } = outcome.headers;
      return { ...outcome, headers, body: checkedRelay(outcome.body, outcome.headers['content-type'] ?? '', outcome.requestId, check) };
    }
    default:
      return outcome;
  }
}

function isResponse(m: JsonRpcMessage): m is JsonRpcResponse {
  return !('method' in m) && 'id' in m;
}

/** A stream that passes every item on, the final answer checked. */
function checkedStream(source: CallStream, check: Checker): CallStream {
  const out = new CallStream({ requestId: source.requestId, mode: source.mode, acceptsSse: true });
  out.onClose(() => source.cancel());
  void (async () => {
    for await (const item of source.read() as AsyncGenerator<StreamItem>) {
      if ('comment' in item) out.comment();
      else if ('failure' in item) out.fail(item.failure);
      else if (!item.final) out.push(item.message);
      else out.finish((isResponse(item.message) ? check(item.message) : undefined) ?? (item.message as JsonRpcResponse));
    }
    out.end();
  })();
  return out;
}

/**
 * The relayed body, byte for byte, with the answer to `requestId` checked on the way: a JSON body is held
 * until complete (it is one message), SSE events pass as soon as they are whole.
 */
function checkedRelay(body: Readable, contentType: string, requestId: JsonRpcId | null, check: Checker): Readable {
  const sse = contentType.startsWith('text/event-stream');
  const chunks: Buffer[] = [];
  const parser = new SseParser();
  const transform = new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (!sse) {
        chunks.push(chunk);
        return done();
      }
      for (const ev of parser.push(chunk)) {
        const replaced = ev.data !== undefined && ev.data.includes('"id"') ? replacementFor(ev.data, requestId, check) : undefined;
        this.push(replaced ? formatSseMessage(replaced) : ev.raw);
      }
      done();
    },
    flush(done) {
      if (!sse) {
        const text = Buffer.concat(chunks).toString('utf8');
        const replaced = replacementFor(text, requestId, check);
        this.push(replaced ? JSON.stringify(replaced) : text);
      }
      done();
    },
  });
  body.on('error', (err) => transform.destroy(err));
  return body.pipe(transform);
}

function replacementFor(text: string, requestId: JsonRpcId | null, check: Checker): JsonRpcResponse | undefined {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return undefined;
  }
  const m = message as JsonRpcMessage;
  if (m === null || typeof m !== 'object' || !isResponse(m) || m.id !== requestId) return undefined;
  return check(m);
}
