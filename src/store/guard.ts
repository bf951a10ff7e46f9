// Whether the store can be counted on now. Every operation goes through the guard: a failure marks the
// store down (logged once, counted) and starts a probe that pings it every second; the first ping that
// answers marks it up again, so service resumes on its own, without a restart. While it is down, governed
// calls are refused before they run (state-stage.ts) and /readyz says not ready. Another operation that
// answers meanwhile only has the probe ping at once: an answer says the store answers, not that it keeps
// what a call needs written (a full Redis answers reads; the SQLite store decides a rate limit on rows it
// holds). Any answer once marked it up: a metrics scrape or the approvals' sweep on a full Redis then let
// the next call run upstream with its audit record unwritable.

import type { Logger } from '../log/logger.js';
import { StoreUnavailableError, type Answer, type Store } from './store.js';

const PROBE_MS = 1_000;

export class StoreGuard {
  private up = true;
  private probe: NodeJS.Timeout | undefined;
  /** A probe's ping is under way: one at a time. */
  private probing = false;
  private closed = false;

  constructor(
    readonly store: Store,
    private readonly log: Logger,
    /** Told about every failed operation (metrics). */
    private readonly onError: () => void = () => {},
  ) {}

  get available(): boolean {
    return this.up;
  }

  /**
   * Runs one operation; a failure marks the store down and is rethrown as StoreUnavailableError. Not an
   * async function: a governed call makes three or more of these, and chaining the operation's own promise
   * once (handlers made once per guard) costs less than an async frame around it.
   */
  run<T>(op: (store: Store) => Promise<T>): Promise<T> {
    let work: Promise<T>;
    try {
      work = op(this.store);
    } catch (err) {
      return Promise.reject(this.failed(err));
    }
    return work.then(this.succeeded as (value: T) => T, this.rethrow);
  }

  /**
   * `run` for an operation that may answer at once (Store.takeTokens, spendBudget, breakerAdmit): an
   * answer is returned as it is, and a synchronous throw is thrown, as StoreUnavailableError, instead of a
   * rejected promise.
   */
  runNow<T>(op: (store: Store) => Answer<T>): Answer<T> {
    let answer: Answer<T>;
    try {
      answer = op(this.store);
    } catch (err) {
      throw this.failed(err);
    }
    return answer instanceof Promise ? answer.then(this.succeeded as (value: T) => T, this.rethrow) : this.succeeded(answer);
  }

  private readonly succeeded = <T>(value: T): T => {
    if (!this.up) this.probeNow();
    return value;
  };

  private readonly rethrow = (err: unknown): never => {
    throw this.failed(err);
  };

  private failed(err: unknown): StoreUnavailableError {
    const unavailable = err instanceof StoreUnavailableError ? err : new StoreUnavailableError(`store: ${(err as Error).message}`, { cause: err });
    this.markDown(unavailable);
    return unavailable;
  }

  /** For readiness: one real round trip now. */
  async check(): Promise<boolean> {
    try {
      await this.store.ping();
    } catch (err) {
      this.failed(err);
      return false;
    }
    this.markUp();
    return true;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.probe);
    await this.store.close();
  }

  private markDown(err: Error): void {
    this.onError();
    if (!this.up) return;
    this.up = false;
    this.log.error('the store is unavailable: governed calls are refused until it is back', { store: this.store.kind, err: err.message });
    if (this.closed) return;
    this.probe = setInterval(() => this.probeNow(), PROBE_MS);
    this.probe.unref();
  }

  /** Pings the store now (unless a ping is under way); its answer marks the store up. */
  private probeNow(): void {
    if (this.probing || this.closed) return;
    this.probing = true;
    let ping: Promise<void>;
    try {
      ping = this.store.ping();
    } catch {
      this.probing = false;
      return;
    }
    ping.then(
      () => {
        this.probing = false;
        this.markUp();
      },
      () => {
        this.probing = false;
      },
    );
  }

  private markUp(): void {
    if (this.up) return;
    this.up = true;
    clearInterval(this.probe);
    this.probe = undefined;
    this.log.info('the store is back: governed calls are served again', { store: this.store.kind });
  }
}
