// The messages of one call as they are produced: a bridge or a stdio session pushes into it, and whoever
// reads it (the edge writing HTTP, or the catalog reading a member) pulls them in order. It is the only
// place a producer learns that its reader went away.

import type { GatewayError, Refusal } from '../errors.js';
import { Cancellation } from './cancellation.js';
import type { JsonRpcId, JsonRpcMessage, JsonRpcResponse } from '../protocol/jsonrpc.js';

/** Where the messages of one call go, as a producer sees it. */
export interface MessageSink {
  readonly closed: boolean;
  /** A message before the final response; false when this sink cannot carry it. */
  push(message: JsonRpcMessage): boolean;
  finish(response: JsonRpcResponse): void;
  fail(err: GatewayError): void;
  /** Keeps a long stream alive through idle proxies (SSE comment); a no-op where meaningless. */
  comment(): void;
  /** Runs once when the reader goes away before the call is finished, or once it is finished. */
  onClose(callback: () => void): void;
}

export type StreamItem = { message: JsonRpcMessage; final: boolean } | { failure: GatewayError } | { comment: true };

/** A refusal a stage made in place of a stream's answer (final-answer.ts), and the stage that made it. */
export interface StreamRefusal {
  refusal: Refusal;
  stage: string | undefined;
}

export interface CallStreamOptions {
  /** The id of the request this call answers (failures are rendered as an error for it). */
  requestId: JsonRpcId | null;
  /** `call`: a request's answer, JSON or SSE; `listen`: a stream of notifications, SSE from the start. */
  mode: 'call' | 'listen';
  /** False when the client cannot take SSE: then nothing can precede the final response. */
  acceptsSse: boolean;
}

export class CallStream implements MessageSink {
  readonly mode: 'call' | 'listen';
  readonly requestId: JsonRpcId | null;
  private readonly acceptsSse: boolean;
  private readonly items: StreamItem[] = [];
  private done = false;
  private wake?: () => void;
  private readonly closers: Array<() => void> = [];
  private cutters: Array<() => void> | undefined;
  /**
   * Set when the final message is a refusal a stage made (`refuse`): the message alone reads as a tool
   * error, and the request line, the span and the metrics would not know a stage refused the call.
   */
  refused: StreamRefusal | undefined;

  constructor(opts: CallStreamOptions) {
    this.mode = opts.mode;
    this.requestId = opts.requestId;
    this.acceptsSse = opts.acceptsSse;
  }

  get closed(): boolean {
    return this.done;
  }

  push(message: JsonRpcMessage): boolean {
    if (this.done || (this.mode === 'call' && !this.acceptsSse)) return false;
    this.items.push({ message, final: false });
    this.notify();
    return true;
  }

  finish(response: JsonRpcResponse): void {
    this.last({ message: response, final: true });
  }

  fail(err: GatewayError): void {
    this.last({ failure: err });
  }

  /** Finishes with `response`, the rendering of a refusal `stage` made (see `refused`). */
  refuse(response: JsonRpcResponse, refused: StreamRefusal): void {
    if (this.done) return;
    this.refused = refused;
    this.finish(response);
  }

  /**
   * Ends the call with `err` from outside its producer (its deadline passed), and tells the producer at once
   * through `onCut`, so it stops the upstream call; the reader still gets `err` as the answer.
   */
  cut(err: GatewayError): void {
    if (this.done) return;
    this.last({ failure: err });
    const cutters = this.cutters;
    this.cutters = undefined;
    if (cutters !== undefined) for (const fn of cutters) fn();
  }

  /** Calls `fn` once if the call is cut (never after it is done). */
  onCut(fn: () => void): void {
    if (!this.done) (this.cutters ??= []).push(fn);
  }

  /**
   * What a producer stops on: `cancel` (its client left) or this call being cut; `dispose` once the work
   * is over.
   */
  stopsOn(cancel: Cancellation): { cancel: Cancellation; dispose(): void } {
    const cut = new Cancellation();
    this.onCut(() => cut.cancel());
    return cancel.linkedWith(cut);
  }

  /** Ends a listen stream without a final message. */
  end(): void {
    if (this.done) return;
    this.done = true;
    this.notify();
  }

  comment(): void {
    if (this.done) return;
    this.items.push({ comment: true });
    this.notify();
  }

  onClose(callback: () => void): void {
    if (this.done && this.items.length === 0) callback();
    else this.closers.push(callback);
  }

  /** The reader went away: the producer hears it through onClose, and nothing more is kept. */
  cancel(): void {
    this.done = true;
    this.items.length = 0;
    this.notify();
    this.runClosers();
  }

  /** The items in order, until the stream is finished, failed, ended or cancelled. */
  async *read(): AsyncGenerator<StreamItem, void, void> {
    try {
      for (;;) {
        while (this.items.length > 0) yield this.items.shift()!;
        if (this.done) return;
        await new Promise<void>((r) => (this.wake = r));
      }
    } finally {
      // Whether the call finished or the reader stopped early (for a listen, that is its cancellation).
      this.done = true;
      this.runClosers();
    }
  }

  /**
   * The same items as JSON-RPC messages, for readers that are not HTTP (a bridge or the catalog reading this
   * as an upstream's reply). A failure is thrown, as an HTTP upstream's reply throws one: rendered here as an
   * error message it became the answer of a call that had failed, 200 instead of its status, with no call
   * id the client could look up (`"callId": "internal"`), until 3 December.
   */
  async *messages(): AsyncGenerator<JsonRpcMessage, void, void> {
    for await (const item of this.read()) {
      if ('message' in item) yield item.message;
      else if ('failure' in item) throw item.failure;
    }
  }

  private last(item: StreamItem): void {
    if (this.done) return;
    this.items.push(item);
    this.done = true;
    this.notify();
  }

  private notify(): void {
    this.wake?.();
    this.wake = undefined;
  }

  private runClosers(): void {
    for (const c of this.closers.splice(0)) c();
  }
}

/**
 * Starts a producer that answers into a new call stream, and returns the stream at once: the edge (or
 * another reader) consumes it while the producer works. A producer that throws fails the stream.
 */
export function produce(opts: CallStreamOptions, work: (sink: CallStream) => Promise<void>, asFailure: (err: unknown) => GatewayError): CallStream {
  const stream = new CallStream(opts);
  work(stream).catch((err: unknown) => stream.fail(asFailure(err)));
  return stream;
}
