// A call's cancellation: the client went away before its answer was complete. Every call has one, and
// almost none is ever cancelled, so it costs nothing until used. In Node 20 an AbortController costs about
// 3 µs to make and an 'abort' listener about 8 µs more per call (issue 17, measured on the pass-through):
// together a tenth of a plain hop. Here the AbortSignal is made only for code that asks for one (bridges,
// streams, waits), and the hot path registers plain callbacks.

export class Cancellation {
  private controller: AbortController | undefined;
  private callbacks: Array<() => void> | undefined;
  private cancelled = false;

  /** `outer`: a signal this follows instead of its own (an HTTP+SSE session's). */
  constructor(private readonly outer?: AbortSignal) {}

  get aborted(): boolean {
    return this.cancelled || (this.outer?.aborted ?? false);
  }

  /** An AbortSignal for APIs that take one; made on first use. */
  get signal(): AbortSignal {
    if (this.outer !== undefined) return this.outer;
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.cancelled) this.controller.abort();
    }
    return this.controller.signal;
  }

  /** Calls `fn` once, when the call is cancelled (never if it already was: check `aborted` first). */
  onCancel(fn: () => void): void {
    if (this.outer !== undefined) this.outer.addEventListener('abort', fn, { once: true });
    else (this.callbacks ??= []).push(fn);
  }

  offCancel(fn: () => void): void {
    if (this.outer !== undefined) return this.outer.removeEventListener('abort', fn);
    const callbacks = this.callbacks;
    if (callbacks === undefined) return;
    const at = callbacks.indexOf(fn);
    if (at >= 0) callbacks.splice(at, 1);
  }

  /**
   * A cancellation that happens when either this one or `other` does; `dispose` forgets it once the work it
   * guards is over. (AbortSignal.any does the same with weak references and registries that cost more than
   * the rest of a bridged call's bookkeeping.)
   */
  linkedWith(other: Cancellation): { cancel: Cancellation; dispose(): void } {
    const linked = new Cancellation();
    if (this.aborted || other.aborted) {
      linked.cancel();
      return { cancel: linked, dispose: () => {} };
    }
    const stop = (): void => linked.cancel();
    this.onCancel(stop);
    other.onCancel(stop);
    return {
      cancel: linked,
      dispose: () => {
        this.offCancel(stop);
        other.offCancel(stop);
      },
    };
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.controller?.abort();
    const callbacks = this.callbacks;
    this.callbacks = undefined;
    if (callbacks !== undefined) for (const fn of callbacks) fn();
  }
}

/** A cancellation for APIs that take either (`UpstreamMessages.post`). */
export function cancellationOf(from: AbortSignal | Cancellation | undefined): Cancellation {
  return from === undefined ? NEVER_CANCELLED : from instanceof Cancellation ? from : new Cancellation(from);
}

/**
 * Calls `fn` once when `signal` aborts, or at once if it already has: a listener added to a signal that has
 * already fired is never called.
 */
export function onAbort(signal: AbortSignal | undefined, fn: () => void): void {
  if (signal?.aborted) fn();
  else signal?.addEventListener('abort', fn, { once: true });
}

/** An AbortSignal for APIs that take either, made only if there is something to follow. */
export function signalOf(from: AbortSignal | Cancellation | undefined): AbortSignal | undefined {
  return from instanceof Cancellation ? from.signal : from;
}

/** A cancellation that never happens (answers written outside a call, requests no client waits for): it keeps no callbacks. */
class NeverCancelled extends Cancellation {
  override onCancel(): void {}
  override offCancel(): void {}
  override cancel(): void {}
}

export const NEVER_CANCELLED: Cancellation = new NeverCancelled();
