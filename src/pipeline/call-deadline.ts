// The longest an answer from an HTTP upstream may take, progress or not (2026-07-28/basic/patterns/
// cancellation.mdx §Timeouts and 2025-11-25/basic/lifecycle.mdx §Timeouts: implementations SHOULD always
// enforce a maximum timeout, regardless of progress notifications). The upstream's other limits each reset:
// `headersMs` ends at the first byte, `bodyMs` counts silence, and a stream that keeps sending progress
// would pass both forever. Past its deadline the answer ends with GW_ERR_UPSTREAM_TIMEOUT, and the upstream
// request is closed, which cancels it on Streamable HTTP.
//
// No timer per call: an answer that is complete when the upstream stage sees it (the usual JSON answer) is
// never watched, and the rest share one coarse clock.

import { GatewayError } from '../errors.js';
import type { CallStream } from './call-stream.js';
import type { Outcome } from './outcome.js';
import type { RelayBody } from './relay-body.js';

interface Watched {
  /** `performance.now()` at which the answer is cut. */
  at: number;
  expire(): void;
}

export class CallDeadlines {
  private readonly watched = new Set<Watched>();
  private timer: NodeJS.Timeout | undefined;

  /**
   * `tickMs`: how often deadlines are looked at, so an answer runs at most this much past its own. `now`:
   * the clock deadlines are read against, `performance.now()` but where a test holds it still, so that what
   * it asserts happened before a cut cannot lose a race with the cut on a slow machine.
   */
  constructor(
    private readonly tickMs = 250,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** How many answers are being watched (for tests). */
  get size(): number {
    return this.watched.size;
  }

  /** `outcome`, cut with `error()` if its answer is still coming at `at` (a `performance.now()` time). */
  bound(outcome: Outcome, at: number, error: () => GatewayError): Outcome {
    if (outcome.kind === 'relay') this.watchBody(outcome.body, at, error);
    else if (outcome.kind === 'stream' && outcome.stream.mode === 'call') this.watchStream(outcome.stream, at, error);
    return outcome;
  }

  private watchBody(body: RelayBody, at: number, error: () => GatewayError): void {
    if (body.settled) return;
    const watched: Watched = { at, expire: () => body.expire(error()) };
    this.add(watched);
    body.onSettled(() => this.watched.delete(watched));
  }

  private watchStream(stream: CallStream, at: number, error: () => GatewayError): void {
    if (stream.closed) return;
    // The reader takes the failure as the answer; the producer hears of the cut and stops the upstream call.
    const watched: Watched = { at, expire: () => stream.cut(error()) };
    this.add(watched);
    stream.onClose(() => this.watched.delete(watched));
  }

  private add(watched: Watched): void {
    this.watched.add(watched);
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.tick(), this.tickMs);
    this.timer.unref();
  }

  private tick(): void {
    const now = this.now();
    for (const w of this.watched) {
      if (w.at > now) continue;
      this.watched.delete(w);
      w.expire();
    }
    if (this.watched.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/** The failure of an answer cut at its deadline. */
export function callTimedOut(upstream: string, limitMs: number, setting = 'timeouts.callMs'): GatewayError {
  return new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', `Upstream "${upstream}" did not finish its answer within ${limitMs} ms (${setting}); the call was cancelled`, upstream);
}
