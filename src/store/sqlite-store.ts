// The embedded store: one SQLite file (`store.path`), written by a worker thread (sqlite-worker.ts) so
// the event loop never waits on the disk. A worker that dies fails the operations in flight and is
// started again by the next operation.

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { WorkerMessage, WorkerReply, WorkerRequest } from './sqlite-worker.js';
import { StoreUnavailableError, type BreakerAdmission, type BreakerSettings, type BreakerState, type BudgetCounter, type BudgetSpend, type CalendarWindow, type AuditAnchor, type AuditEntry, type AuditQuery, type AuditRecord, type IdempotencyClaim, type IdempotencyRecord, type Store, type TokenBucket, type TokenTake, type WindowCount } from './store.js';

// Run from the TypeScript sources (tests, through tsx) or from dist/: the worker is the sibling file, and
// from the sources it registers tsx's loader first (workers do not inherit it on Node 20).
/** The longest a request waits for announced appends before it goes to the writer without them. */
const COMMIT_DELAY_MS = 1;

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL(FROM_SOURCES ? './sqlite-worker.ts' : './sqlite-worker.js', import.meta.url);

function newWorker(path: string): Worker {
  if (!FROM_SOURCES) return new Worker(WORKER_URL, { workerData: { path } });
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  return new Worker(`import(${tsx}).then((m) => { m.register(); return import(${JSON.stringify(WORKER_URL.href)}); })`, { eval: true, workerData: { path } });
}

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private outbox: WorkerRequest[] = [];
  /** A message is with the writer and not answered yet. */
  private sent = false;
  /** How many requests the next message waits for (appends announced as coming soon), at most COMMIT_DELAY_MS. */
  private target = 0;
  private delay: NodeJS.Timeout | undefined;
  private soon: NodeJS.Immediate | undefined;
  private closed = false;

  constructor(private readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
    this.start();
  }

  private start(): Worker {
    const worker = newWorker(this.path);
    worker.on('message', (replies: WorkerReply[]) => {
      // What gathered during the commit goes now: it has waited long enough.
      this.sent = false;
      if (this.outbox.length > 0) this.send();
      for (const reply of replies) {
        const p = this.pending.get(reply.id);
        if (!p) continue;
        this.pending.delete(reply.id);
        if (reply.ok) p.resolve(reply.value);
        else p.reject(new StoreUnavailableError(`SQLite store: ${reply.error}`));
      }
      if (this.pending.size === 0) worker.unref();
    });
    const died = (err: Error): void => {
      if (this.worker === worker) this.worker = undefined;
      this.sent = false;
      if (this.outbox.length > 0 && !this.closed) this.scheduleSend();
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        p.reject(new StoreUnavailableError(`SQLite store: the writer stopped (${err.message})`, { cause: err }));
      }
    };
    worker.on('error', died);
    worker.on('exit', (code) => died(new Error(`exit code ${code}`)));
    // An idle writer does not keep the process alive; one with calls pending does (see call()).
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private call<T>(op: string, ...args: unknown[]): Promise<T> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('SQLite store: closed'));
    const worker = this.worker ?? this.start();
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      if (this.pending.size === 0) worker.ref();
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.outbox.push({ id, op, args });
      this.scheduleSend();
    });
  }

  /**
   * Group commit. One message is with the writer at a time: what is asked for meanwhile goes together as
   * the next (one postMessage, one commit, one fsync for all of it). With the writer idle it goes at the
   * next turn, unless appends were announced (calls still running, see Store.appendAudit): then it waits
   * for them, at most COMMIT_DELAY_MS. Under load that divides a commit's cost by the calls in flight; a
   * lone call is never held.
   */
  private scheduleSend(): void {
    if (this.sent) return;
    if (this.outbox.length >= this.target) {
      clearTimeout(this.delay);
      this.delay = undefined;
      this.soon ??= setImmediate(() => this.send());
    } else {
      this.delay ??= setTimeout(() => this.send(), COMMIT_DELAY_MS);
    }
  }

  /** Sends what is still awaited (a writer that died meanwhile has failed the rest) to the current writer. */
  private send(): void {
    clearTimeout(this.delay);
    clearImmediate(this.soon);
    this.delay = undefined;
    this.soon = undefined;
    if (this.sent) return;
    const requests = this.outbox.filter((r) => this.pending.has(r.id));
    this.outbox = [];
    this.target = 0;
    if (requests.length === 0) return;
    if (this.closed && this.worker === undefined) {
      for (const r of requests) this.fail(r.id, new StoreUnavailableError('SQLite store: closed'));
      return;
    }
    this.sent = true;
    (this.worker ?? this.start()).postMessage({ requests } satisfies WorkerMessage);
  }

  private fail(id: number, err: Error): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    p.reject(err);
  }

  async ping(): Promise<void> {
    await this.call('ping');
  }

  addToWindow(key: string, amount: number, windowMs: number): Promise<WindowCount> {
    return this.call('addToWindow', key, amount, windowMs);
  }

  takeTokens(key: string, bucket: TokenBucket, cost: number): Promise<TokenTake> {
    return this.call('takeTokens', key, bucket, cost);
  }

  spendBudget(key: string, amount: number, limit: number, window: CalendarWindow): Promise<BudgetSpend> {
    return this.call('spendBudget', key, amount, limit, window);
  }

  listBudgets(prefix: string): Promise<BudgetCounter[]> {
    return this.call('listBudgets', prefix);
  }

  breakerAdmit(key: string, settings: BreakerSettings): Promise<BreakerAdmission> {
    return this.call('breakerAdmit', key, settings);
  }

  breakerRecord(key: string, ok: boolean, settings: BreakerSettings): Promise<BreakerState> {
    return this.call('breakerRecord', key, ok, settings);
  }

  claimIdempotency(key: string, digest: string, owner: string, leaseMs: number, ttlMs: number): Promise<IdempotencyClaim> {
    return this.call('claimIdempotency', key, digest, owner, leaseMs, ttlMs);
  }

  renewIdempotency(key: string, owner: string, leaseMs: number): Promise<void> {
    return this.call('renewIdempotency', key, owner, leaseMs);
  }

  completeIdempotency(key: string, owner: string, response: string, ttlMs: number): Promise<void> {
    return this.call('completeIdempotency', key, owner, response, ttlMs);
  }

  releaseIdempotency(key: string, owner: string): Promise<void> {
    return this.call('releaseIdempotency', key, owner);
  }

  readIdempotency(key: string): Promise<IdempotencyRecord | undefined> {
    return this.call('readIdempotency', key);
  }

  putApproval(id: string, doc: string, ttlMs: number): Promise<void> {
    return this.call('putApproval', id, doc, ttlMs);
  }

  getApproval(id: string): Promise<string | undefined> {
    return this.call('getApproval', id);
  }

  listApprovals(): Promise<string[]> {
    return this.call('listApprovals');
  }

  appendAudit(entry: AuditEntry, more = 0): Promise<AuditAnchor> {
    // This append, the ones already waiting, and those announced: send when they are all in.
    this.target = Math.max(this.target, this.outbox.length + 1 + more);
    return this.call('appendAudit', entry);
  }

  readAudit(query: AuditQuery): Promise<AuditRecord[]> {
    return this.call('readAudit', query);
  }

  auditAnchor(): Promise<AuditAnchor | undefined> {
    return this.call('auditAnchor');
  }

  pruneAudit(beforeMs: number): Promise<number> {
    return this.call('pruneAudit', beforeMs);
  }

  /** Lets the operations already sent finish (at most 5 s), then stops the writer. */
  async close(): Promise<void> {
    this.closed = true;
    for (let waited = 0; this.pending.size > 0 && waited < 5_000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }
}
