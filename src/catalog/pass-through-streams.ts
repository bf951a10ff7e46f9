// The listening streams (a legacy client's GET stream, a modern client's subscriptions/listen) that one
// upstream's pass-through opened, held apart from any one SingleUpstream (gateway.ts keeps one set for every
// configuration it builds), so that the reload that stops passing that upstream through ends them. The
// sessions opened on the pass-through are unknown to the catalog (their next request is answered 404), but a
// stream already open would go on relaying what the upstream sends, updates of a URI the new rules hide
// included, and keep the upstream watching it: until 5 December it did. Each is ended as a server ends one
// on its own initiative: a GET stream simply ends (its client reconnects and meets the new path), a listen
// gets its completion result first (2026-07-28 basic/patterns/subscriptions.mdx §Graceful Closure).

import { PassThrough as ByteQueue, type Readable } from 'node:stream';
import type { CallContext } from '../pipeline/context.js';
import type { CallStream } from '../pipeline/call-stream.js';
import { RelayBody } from '../pipeline/relay-body.js';
import type { Outcome } from '../pipeline/outcome.js';
import type { Upstream } from '../pipeline/ports.js';
import type { JsonRpcId, JsonRpcResponse } from '../protocol/jsonrpc.js';
import { META_SUBSCRIPTION_ID } from '../protocol/methods.js';
import { formatSseMessage } from '../protocol/sse.js';

/** Whether `ctx` opens a listening stream: the only calls whose answer is held here. */
export function opensListenStream(ctx: CallContext): boolean {
  return ctx.httpMethod === 'GET' || ctx.method === 'subscriptions/listen';
}

export class PassThroughStreams {
  /** The ends of the open streams, by the member whose pass-through opened them. */
  private readonly open = new Map<Upstream, Set<() => void>>();
  /** The member the running configuration passes through; null: none (it is served through the catalog). */
  private served: Upstream | null | undefined;

  /**
   * The outcome of a listening request `member`'s pass-through answered, made endable and held until it
   * ends. One answered on a path no longer served (a request the retired configuration still carried) is
   * ended at once. Other outcomes (a refusal, a plain answer) come back as they are.
   */
  hold(member: Upstream, ctx: CallContext, outcome: Outcome): Outcome {
    const endable = endableStream(ctx, outcome);
    if (endable === undefined) return outcome;
    let streams = this.open.get(member);
    if (streams === undefined) this.open.set(member, (streams = new Set()));
    const held = streams;
    const end = endable.end;
    held.add(end);
    endable.onDone(() => {
      held.delete(end);
      if (held.size === 0 && this.open.get(member) === held) this.open.delete(member);
    });
    if (this.served !== undefined && this.served !== member) end();
    return endable.outcome;
  }

  /**
   * Makes `member` the one passed through from now on (undefined: none), and ends every stream another
   * member's pass-through opened, or every one when none is served. Returns how many were ended.
   */
  serve(member: Upstream | undefined): number {
    this.served = member ?? null;
    let ended = 0;
    for (const [owner, streams] of [...this.open]) {
      if (owner === member) continue;
      this.open.delete(owner);
      for (const end of streams) {
        end();
        ended++;
      }
    }
    return ended;
  }
}

interface EndableStream {
  outcome: Outcome;
  /** Ends the stream gracefully and stops what feeds it upstream. */
  end(): void;
  /** Calls `fn` once the stream is over, however it ended. */
  onDone(fn: () => void): void;
}

/** subscriptions.mdx §Graceful Closure: the listen's own result, as a server that ends one sends it. */
function completion(id: JsonRpcId): JsonRpcResponse {
  return { jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [META_SUBSCRIPTION_ID]: id } } };
}

function endableStream(ctx: CallContext, outcome: Outcome): EndableStream | undefined {
  if (outcome.kind === 'stream' && outcome.stream.mode === 'listen') return endableCallStream(ctx, outcome.stream, outcome);
  if (outcome.kind === 'relay' && !outcome.body.settled) return endableRelay(outcome);
  return undefined;
}

/** A stream a member writes message by message (stdio, the bridges). */
function endableCallStream(ctx: CallContext, stream: CallStream, outcome: Outcome): EndableStream {
  return {
    outcome,
    end: () => {
      if (stream.closed) return;
      const id = stream.requestId;
      if (id === null) stream.end();
      else stream.finish(completion(id));
      // What feeds the stream (a stdio child's listen) stops on the call's cancellation: cancelled once the
      // edge has read the stream to its end, not before, or the completion result would not be written.
      stream.onClose(() => ctx.cancel.cancel());
    },
    onDone: (fn) => stream.onClose(fn),
  };
}

/**
 * An upstream's SSE body relayed as it came (HTTP): its bytes go on through a queue, which the end takes
 * from the upstream (whose request is then stopped) and closes after the listen's completion result. The
 * pass-through relays a modern listen's events whole (modern-answer-stream.ts), so the result starts an
 * event of its own; a legacy GET stream's last event, if cut, is dropped by the edge's SSE reader.
 */
function endableRelay(outcome: Extract<Outcome, { kind: 'relay' }>): EndableStream {
  const upstream: Readable = outcome.body.readable();
  const queue = new ByteQueue();
  upstream.pipe(queue);
  upstream.once('error', (err) => queue.destroy(err));
  let ended = false;
  const end = (): void => {
    if (ended || queue.destroyed) return;
    ended = true;
    upstream.unpipe(queue);
    upstream.destroy();
    const id = outcome.requestId;
    if (id !== null) queue.write(formatSseMessage(completion(id)));
    queue.end();
  };
  const body = RelayBody.fromReadable(queue, () => upstream.destroy(), outcome.body.maxMessageBytes);
  return {
    outcome: { ...outcome, body },
    end,
    onDone: (fn) => queue.once('close', fn),
  };
}
