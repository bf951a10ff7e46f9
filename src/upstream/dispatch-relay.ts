// The pass-through's upstream request through undici's dispatch API. undici's `request()` wraps every
// response in a Readable, and the promise, abort listener and stream events around it cost more than the
// copy itself on a pass-through of small answers (issue 17: about 15 µs of a 60 µs hop on the bench
// machine, measured with a bare hop written both ways). Here the body goes straight from undici's
// callbacks into a RelayBody.

import type { Dispatcher } from 'undici';
import { errors as undiciErrors } from 'undici';
import type { Cancellation } from '../pipeline/cancellation.js';
import { RelayBody } from '../pipeline/relay-body.js';

/** What `dispatchRelay` resolves with once the upstream's status line and headers are in. */
export interface RelayResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: RelayBody;
}

/**
 * One upstream request through undici's dispatch API: resolves at the response's headers, rejects if the
 * request fails before them, and stops the request when the call is cancelled.
 */
export function dispatchRelay(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions, cancel: Cancellation, maxMessageBytes?: number): Promise<RelayResponse> {
  return new Promise((resolve, reject) => {
    dispatcher.dispatch(options, new RelayHandler(resolve, reject, cancel, maxMessageBytes));
  });
}

/**
 * A class rather than an object literal per call: one shape for V8. undici keeps a finished request (and
 * so its handler) in its client's queue until a few hundred have accumulated, so the handler lets go of
 * the call's objects when it is done: otherwise each call's body, promise and context would survive
 * young-generation GCs, and a scavenge costs what it keeps (measured: 3–5 ms instead of 1 ms each).
 */
class RelayHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private body: RelayBody | undefined;
  private resolve: ((response: RelayResponse) => void) | undefined;
  private reject: ((err: Error) => void) | undefined;
  private cancel: Cancellation | undefined;
  private readonly onAbort: () => void;

  constructor(
    resolve: (response: RelayResponse) => void,
    reject: (err: Error) => void,
    cancel: Cancellation,
    private readonly maxMessageBytes?: number,
  ) {
    this.resolve = resolve;
    this.reject = reject;
    this.cancel = cancel;
    // A request still queued in the pool when the client leaves is stopped as soon as undici starts it.
    this.onAbort = () => this.controller?.abort(new undiciErrors.RequestAbortedError());
    cancel.onCancel(this.onAbort);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.cancel?.aborted) controller.abort(new undiciErrors.RequestAbortedError());
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // 1xx informational answers are not the response.
    if (statusCode < 200 || this.resolve === undefined) return;
    this.body = new RelayBody(controller, this.maxMessageBytes);
    this.resolve({ statusCode, headers, body: this.body });
    this.resolve = undefined;
    this.reject = undefined;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.body?.push(chunk);
  }

  onResponseEnd(): void {
    const body = this.body;
    this.done();
    body?.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    const { body, reject } = this;
    this.done();
    if (body !== undefined) body.fail(err);
    else reject?.(err);
  }

  private done(): void {
    this.cancel?.offCancel(this.onAbort);
    this.cancel = undefined;
    this.body = undefined;
    this.controller = undefined;
    this.resolve = undefined;
    this.reject = undefined;
  }
}
