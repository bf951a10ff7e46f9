// The embedded store: one SQLite file (`store.path`), written by a worker thread (sqlite-worker.ts) so
// the event loop never waits on the disk. A worker that dies fails the operations in flight and is
// started again by the next operation.

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { WorkerReply, WorkerRequest } from './sqlite-worker.js';
import { StoreUnavailableError, type AuditAnchor, type AuditEntry, type AuditQuery, type AuditRecord, type IdempotencyClaim, type IdempotencyRecord, type Store, type TokenBucket, type TokenTake, type WindowCount } from './store.js';

// Run from the TypeScript sources (tests, through tsx) or from dist/: the worker is the sibling file, and
// from the sources it registers tsx's loader first (workers do not inherit it on Node 20).
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
  private closed = false;

  constructor(private readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
    this.start();
  }

  private start(): Worker {
    const worker = newWorker(this.path);
    worker.on('message', (replies: WorkerReply[]) => {
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
      worker.postMessage({ id, op, args } satisfies WorkerRequest);
    });
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

  appendAudit(entry: AuditEntry): Promise<AuditRecord> {
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
