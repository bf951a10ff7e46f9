// The listening streams (a legacy client's GET stream, a modern client's subscriptions/listen) that one
// upstream's pass-through opened, or its era bridge served (a client of the era it does not speak), held
// apart from any one SingleUpstream (gateway.ts keeps one set for every configuration it builds), so that
// the reload that stops passing that upstream through ends them. The sessions opened on the pass-through
// (or held by its bridge) are unknown to the catalog (their next request is answered 404), but a
// stream already open would go on relaying what the upstream sends, updates of a URI the new rules hide
// included, and keep the upstream watching it: until 5 December it did. Each is ended as a server ends one
// on its own initiative: a GET stream simply ends (its client reconnects and meets the new path), a listen
// gets its completion result first (2026-07-28 basic/patterns/subscriptions.mdx §Graceful Closure).
// A reload that goes on passing the same upstream through judges its modern listens' resource
// subscriptions again (its egress rules may now block one), as open-listens.ts does the catalog's, and the
// resource subscriptions legacy sessions made through it (pass-through-subscriptions.ts). A listen the old
// rules let through and held only after that judgement (still in the old configuration's pipeline, or
// awaiting the upstream's acknowledgment, while it ran) is judged under the new rules as it is held: until
// 5 December it went on, the upstream watching a URI they forbid, until a later reload.

import { PassThrough as ByteQueue, type Readable } from 'node:stream';
import type { Logger } from '../log/logger.js';
import type { CallContext } from '../pipeline/context.js';
import type { CallStream } from '../pipeline/call-stream.js';
import { RelayBody } from '../pipeline/relay-body.js';
import type { Outcome } from '../pipeline/outcome.js';
import type { SubscriptionJudge, Upstream } from '../pipeline/ports.js';
import type { Principal } from '../pipeline/principal.js';
import type { JsonRpcId, JsonRpcResponse } from '../protocol/jsonrpc.js';
import { META_SUBSCRIPTION_ID } from '../protocol/methods.js';
import { formatSseMessage } from '../protocol/sse.js';
import { allowed } from './open-listens.js';
import { PassThroughSubscriptions } from './pass-through-subscriptions.js';

/** Whether `ctx` opens a listening stream: the only calls whose answer is held here. */
export function opensListenStream(ctx: CallContext): boolean {
  return ctx.httpMethod === 'GET' || ctx.method === 'subscriptions/listen';
}

/** One held stream: how to end it, and for a modern listen whom it serves and the URIs it subscribed to. */
interface HeldStream {
  end(): void;
  principal: Principal;
  capabilities: Record<string, unknown>;
  /** The resource URIs the listen asked for, less those the egress stage withheld; none for a GET stream. */
  uris: readonly string[];
}

export class PassThroughStreams {
  /** The open streams, by the member whose pass-through opened them. */
  private readonly open = new Map<Upstream, Set<HeldStream>>();
  /** The member the running configuration passes through; null: none (it is served through the catalog). */
  private served: Upstream | null | undefined;
  /**
   * The rules that last judged the listens (rejudge), and the configuration's pass-through (its
   * SingleUpstream) they came with: a listen another one carried was let through by other rules.
   */
  private judged: { carrier: Upstream; mayKeep: SubscriptionJudge } | undefined;
  /** The subscriptions legacy sessions made through the pass-through, held by the upstream's sessions. */
  readonly subscriptions: PassThroughSubscriptions;

  constructor(log: Logger) {
    this.subscriptions = new PassThroughSubscriptions(log);
  }

  /**
   * The outcome of a listening request `carrier` (a configuration's pass-through of `member`) answered, made
   * endable and held until it ends. One answered on a path no longer served (a request the retired
   * configuration still carried) is ended at once. A listen with resource subscriptions that another
   * configuration's rules judged the held listens since (`carrier` is not the pass-through they came with)
   * was let through by older rules, and missed by that judgement: it is judged under the newer rules (as
   * rejudge does, in the background) and ended if they forbid one of its URIs. Other outcomes (a refusal, a
   * plain answer) come back as they are.
   */
  hold(member: Upstream, ctx: CallContext, outcome: Outcome, carrier: Upstream): Outcome {
    const endable = endableStream(ctx, outcome);
    if (endable === undefined) return outcome;
    let streams = this.open.get(member);
    if (streams === undefined) this.open.set(member, (streams = new Set()));
    const held = streams;
    const stream: HeldStream = { end: endable.end, principal: ctx.principal, capabilities: ctx.clientCapabilities, uris: subscribedUris(ctx) };
    held.add(stream);
    endable.onDone(() => {
      held.delete(stream);
      if (held.size === 0 && this.open.get(member) === held) this.open.delete(member);
    });
    if (this.served !== undefined && this.served !== member) stream.end();
    else if (stream.uris.length > 0 && this.judged !== undefined && this.judged.carrier !== carrier) void endIfForbidden(stream, this.judged.mayKeep);
    return endable.outcome;
  }

  /**
   * Makes `member` the one passed through from now on (undefined: none), and ends every stream another
   * member's pass-through opened, or every one when none is served. Returns how many were ended.
   */
  serve(member: Upstream | undefined): number {
    this.served = member ?? null;
    // Rules of a configuration no longer served judge nothing more: not held, they can be let go of.
    if (member === undefined) this.judged = undefined;
    this.subscriptions.keepOnly(member);
    let ended = 0;
    for (const [owner, streams] of [...this.open]) {
      if (owner === member) continue;
      this.open.delete(owner);
      for (const stream of streams) {
        stream.end();
        ended++;
      }
    }
    return ended;
  }

  /** Whether `member`'s pass-through holds any open stream. */
  holds(member: Upstream): boolean {
    return this.open.has(member);
  }

  /**
   * `member` is served through the catalog from now on without a reload (SingleUpstream found names to
   * rewrite or hide): ends the streams its pass-through opened, as the reload that retires it does (serve).
   * A retired configuration's late switch leaves alone the streams of a member no longer the one served.
   * Returns how many were ended.
   */
  retire(member: Upstream): number {
    if (this.served !== undefined && this.served !== member) return 0;
    return this.serve(undefined);
  }

  /**
   * Ends each listen `member`'s pass-through holds one of whose URIs `mayKeep` no longer allows (one that
   * cannot be judged is not kept), one URI at a time; its filter, settled by its acknowledgment, cannot be
   * narrowed in place. Returns how many were ended. `carrier` is the pass-through of the configuration whose
   * rules `mayKeep` are: listens older ones carry are judged as they are held (hold).
   */
  async rejudge(member: Upstream, mayKeep: SubscriptionJudge, carrier: Upstream): Promise<number> {
    this.judged = { carrier, mayKeep };
    let ended = 0;
    for (const stream of [...(this.open.get(member) ?? [])]) if (await endIfForbidden(stream, mayKeep)) ended++;
    return ended;
  }
}

/** Ends `stream` if `mayKeep` no longer allows one of its URIs (one that cannot be judged is not kept). */
async function endIfForbidden(stream: HeldStream, mayKeep: SubscriptionJudge): Promise<boolean> {
  for (const uri of stream.uris) {
    if (await allowed(mayKeep, stream, uri)) continue;
    stream.end();
    return true;
  }
  return false;
}

const NO_URIS: readonly string[] = [];

/** The URIs a modern listen's upstream was asked to watch: those it named, less those the egress stage withheld. */
function subscribedUris(ctx: CallContext): readonly string[] {
  if (ctx.method !== 'subscriptions/listen') return NO_URIS;
  const asked = (ctx.message as { params?: { notifications?: { resourceSubscriptions?: unknown } } } | undefined)?.params?.notifications?.resourceSubscriptions;
  if (!Array.isArray(asked)) return NO_URIS;
  const withheld = ctx.withheldUris;
  return asked.filter((uri): uri is string => typeof uri === 'string' && withheld?.has(uri) !== true);
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
