// A relayed answer's body (Outcome `relay`) on its way to the client, without a stream object per call:
// the producer pushes chunks, the one consumer (the edge copying it to the client) takes them through a
// sink, with backpressure. Consumers that parse the body as it comes (SSE relays, the audit's
// interception) ask for a Readable and get one. See upstream/dispatch-relay.ts for why.

import { Readable } from 'node:stream';
import { WholeSse } from '../protocol/whole-sse.js';
import { MAX_EVENT_CHARS } from '../protocol/sse.js';

/** Where a body's chunks go. `data` returning false pauses the source until `RelayBody.resume()`. */
export interface BodySink {
  data(chunk: Buffer): boolean;
  end(): void;
  error(err: Error): void;
  /** The whole body in one chunk, instead of `data` then `end`, when it is all at hand on being consumed. */
  whole?(chunk: Buffer): void;
}

/** How a body's source is paused, resumed and stopped. */
export interface BodySource {
  pause(): void;
  resume(): void;
  abort(reason: Error): void;
}

const FIXED: BodySource = { pause() {}, resume() {}, abort() {} };

/**
 * The most of a body read whole (`collect`) by default: a governed call's JSON answer, a bridged or
 * catalogued one. Without a bound an upstream answering with gigabytes grew the gateway's memory until it
 * failed. Each upstream's `maxMessageBytes` (this by default) bounds its bodies read whole, one SSE event
 * and one stdio line alike, so an answer too big for one transport is too big for all of them.
 */
export const MAX_WHOLE_BODY_BYTES = MAX_EVENT_CHARS;

/** A body read whole grew past its bound: the peer that sent it failed (upstream/failures.ts says whose). */
export class BodyTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`sent a response body larger than ${maxBytes} bytes`);
    this.name = 'BodyTooLarge';
  }
}

/**
 * The body was dropped (`destroy`) before its end: what its consumer hears, so a reader of its view or a
 * pending `collect` finishes. Not the upstream's failure: whoever dropped it knows why.
 */
export class BodyDropped extends Error {
  constructor() {
    super('the relayed body was dropped');
    this.name = 'BodyDropped';
  }
}

/** The error listener of a view not read yet: its reader, when it comes, learns the error from the view's state. */
function ignoreUntilRead(): void {}

export class RelayBody {
  private sink: BodySink | undefined;
  /** Chunks that came before anyone consumed the body (headers and the first chunk often share a read). */
  private held: Buffer[] | undefined;
  private heldBytes = 0;
  private state: 'open' | 'ended' | 'failed' | 'destroyed' = 'open';
  private failure: Error | undefined;
  /** Told once when the body stops being open (a deadline watching it). */
  private settledHook: (() => void) | undefined;
  /** Told once when the body stops being open (someone waiting a moment for it to end; see endsWithin). */
  private settleWaiter: (() => void) | undefined;
  /** The whole body read as SSE events, once (see peekWholeSse). */
  private sse: WholeSse | undefined;

  /**
   * @param maxMessageBytes the most of this body held whole (`collect`), and of one of its SSE events: the
   *   upstream's `maxMessageBytes`. Infinite for a body whose bytes are all held already (`of`).
   */
  constructor(
    private readonly source: BodySource,
    readonly maxMessageBytes: number = MAX_WHOLE_BODY_BYTES,
  ) {}

  /**
   * A body whose bytes are all at hand (an answer read whole and passed on unchanged). `sse`: those bytes
   * already read as SSE events, by whoever made them.
   */
  static of(bytes: Buffer, sse?: WholeSse): RelayBody {
    const body = new RelayBody(FIXED, Infinity);
    body.push(bytes);
    body.end();
    body.sse = sse;
    return body;
  }

  /**
   * Any Readable as a body (a transformed relay, tests). `onAbort` hears a stop first: destroying a
   * Readable.from of a generator waits for the generator's next step, which a silent source never takes.
   */
  static fromReadable(readable: Readable, onAbort?: () => void, maxMessageBytes = MAX_WHOLE_BODY_BYTES): RelayBody {
    const abort = (): void => {
      onAbort?.();
      readable.destroy();
    };
    const body = new RelayBody({ pause: () => readable.pause(), resume: () => readable.resume(), abort }, maxMessageBytes);
    // Paused until consumed; what it pushes before that is held.
    readable.on('data', (chunk: Buffer) => body.push(chunk));
    readable.once('end', () => body.end());
    readable.once('error', (err) => body.fail(err));
    // A stream that closes without its end (the upstream went away mid-answer) is a failure.
    readable.once('close', () => {
      if (!readable.readableEnded) body.fail(new Error('the upstream closed the response before its end'));
    });
    readable.pause();
    return body;
  }

  // ---- the producer's side ----

  push(chunk: Buffer): void {
    if (this.state !== 'open') return;
    if (this.sink === undefined) {
      // Held until consumed, so held whole: bounded as a body read whole is.
      this.heldBytes += chunk.length;
      if (this.heldBytes > this.maxMessageBytes) {
        this.held = undefined;
        return this.expire(new BodyTooLarge(this.maxMessageBytes));
      }
      (this.held ??= []).push(chunk);
    }
    // A sink may end the body from `data` (collect past its bound); a stopped source is not paused.
    else if (!this.sink.data(chunk) && this.state === 'open') this.source.pause();
  }

  end(): void {
    if (this.state !== 'open') return;
    this.state = 'ended';
    this.settle();
    this.sink?.end();
  }

  fail(err: Error): void {
    if (this.state !== 'open') return;
    this.state = 'failed';
    this.failure = err;
    this.settle();
    this.sink?.error(err);
  }

  /** Whether the body is done one way or another (ended, failed, dropped). */
  get settled(): boolean {
    return this.state !== 'open';
  }

  /** Calls `fn` once when the body stops being open; at once if it already has. */
  onSettled(fn: () => void): void {
    if (this.state !== 'open') fn();
    else this.settledHook = fn;
  }

  /** Ends the body with `err` and stops its source: its time is up. */
  expire(err: Error): void {
    if (this.state !== 'open') return;
    this.fail(err);
    this.source.abort(err);
  }

  private settle(): void {
    const hook = this.settledHook;
    this.settledHook = undefined;
    hook?.();
    const waiter = this.settleWaiter;
    this.settleWaiter = undefined;
    waiter?.();
  }

  /**
   * Resolves once the body has ended (or failed) or `ms` have passed, whichever comes first; the body is
   * not consumed. For an answer that is usually short: waiting a moment for its end lets it be handled
   * whole (see peekWhole) instead of as a stream.
   */
  endsWithin(ms: number): Promise<void> {
    if (this.state !== 'open') return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.settleWaiter = undefined;
        resolve();
      }, ms);
      this.settleWaiter = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  // ---- the consumer's side ----

  /**
   * The whole body, when it has all come and nobody has consumed it yet; the body stays unconsumed. Chunks
   * that came apart are joined once, and kept joined.
   */
  peekWhole(): Buffer | undefined {
    const held = this.held;
    if (this.state !== 'ended' || this.sink !== undefined || held === undefined || held.length === 0) return undefined;
    if (held.length > 1) this.held = [Buffer.concat(held)];
    return this.held![0];
  }

  /**
   * The chunks of a body that has all come, nobody having consumed it yet, as they came (not joined, unlike
   * peekWhole: a look at its ends costs no copy); none for a body that ended empty. Undefined while it is
   * still coming, or once consumed.
   */
  peekChunks(): readonly Buffer[] | undefined {
    if (this.state !== 'ended' || this.sink !== undefined) return undefined;
    return this.held ?? [];
  }

  /**
   * peekWhole's bytes read as SSE events, split once and kept: the pass-through, the audit and the edge
   * each look at a short answer's stream, and none of them splits it or parses its JSON again.
   */
  peekWholeSse(): WholeSse | undefined {
    const whole = this.peekWhole();
    if (whole === undefined) return undefined;
    return (this.sse ??= WholeSse.read(whole));
  }

  /** Delivers the body to `sink`, what came already first. A body has one consumer. */
  consume(sink: BodySink): void {
    if (this.sink !== undefined) throw new Error('a relayed body has one consumer');
    this.sink = sink;
    const held = this.held;
    this.held = undefined;
    // The usual small answer: it came whole, with its headers, before anyone asked for it.
    if (this.state === 'ended' && held !== undefined && held.length === 1 && sink.whole !== undefined) return sink.whole(held[0]!);
    let more = true;
    if (held !== undefined) for (const chunk of held) more = sink.data(chunk);
    if (this.state === 'ended') sink.end();
    else if (this.state === 'failed') sink.error(this.failure!);
    else if (more) this.source.resume();
    else this.source.pause();
  }

  resume(): void {
    if (this.state === 'open') this.source.resume();
  }

  /**
   * Stops the body where it is; its consumer, if it has one, hears BodyDropped once, as a failure: a loop
   * reading the view, or a `collect`, would otherwise wait for good. Until 5 December it heard nothing, and
   * a body dropped under its reader (a closed connection) left that reader, and its call, in flight.
   */
  destroy(): void {
    if (this.state !== 'open') return;
    this.state = 'destroyed';
    this.settle();
    this.held = undefined;
    const dropped = new BodyDropped();
    this.source.abort(dropped);
    this.sink?.error(dropped);
  }

  /** Reads and drops the rest, so the upstream connection can be reused. */
  dump(): void {
    this.consume({ data: () => true, end() {}, error() {} });
  }

  /**
   * The whole body as one Buffer; rejects with BodyTooLarge, and stops the source, once it passes `maxBytes`.
   */
  collect(maxBytes = this.maxMessageBytes): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let tooLarge = false;
      this.consume({
        data: (chunk) => {
          size += chunk.length;
          if (size <= maxBytes) return chunks.push(chunk) > 0;
          if (!tooLarge) {
            // A body that had all come already (held) ends anyway; one still coming is stopped.
            tooLarge = true;
            chunks.length = 0;
            const err = new BodyTooLarge(maxBytes);
            reject(err);
            this.expire(err);
          }
          return false;
        },
        end: () => {
          if (!tooLarge) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
        },
        error: reject,
      });
    });
  }

  /** At most the first `limit` bytes (an error's explanation); the rest is not read. Rejects if the body fails. */
  head(limit: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      this.consume({
        data: (chunk) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size < limit) return true;
          // Resolved before the drop, whose BodyDropped then finds the promise settled.
          resolve(Buffer.concat(chunks).subarray(0, limit));
          this.destroy();
          return false;
        },
        end: () => resolve(Buffer.concat(chunks)),
        error: reject,
      });
    });
  }

  /** The body as a Readable, for consumers that parse it as it comes. */
  readable(): Readable {
    const view = new Readable({
      read: () => this.resume(),
      destroy: (err, callback) => {
        this.destroy();
        callback(err);
      },
    });
    this.consume({ data: (chunk) => view.push(chunk), end: () => view.push(null), error: (err) => view.destroy(err) });
    // The view is often handed to a reader that starts later (an async generator runs at its first `next`),
    // and a stream destroyed with an error while nobody listens throws it out of the process: a client that
    // left before the relay began took the gateway down (found by the edge fuzzer). The error stays in the
    // view's state (`errored`), and a reader that comes later still gets it.
    view.on('error', ignoreUntilRead);
    return view;
  }
}
