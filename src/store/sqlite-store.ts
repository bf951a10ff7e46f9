// The embedded store: one SQLite file (`store.path`), written by a worker thread (sqlite-worker.ts) so
// the event loop never waits on the disk. The worker starts at the first operation, not before: it is a
// V8 heap and a SQLite library of its own (about 12 MB of RSS), which a config that keeps nothing here
// (no audit, limits, budgets, breakers or idempotency) should not pay for (issue 17). A worker that dies
// fails the operations in flight and is started again by the next operation.

import { constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { access, open, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { encodeRequests, forEachReply, type SqliteWorkerData, type WorkerReplies, type WorkerRequest } from './sqlite-wire.js';
import { growingLru } from '../lru.js';
import { needsPrivateCopy } from './sqlite-read-copy.js';
import { HEADER_BYTES, headerVersion, refusedVersion } from './sqlite-version.js';
import { entryJson } from './audit-chain.js';
import { breakerLifetimeMs, liveBreaker, nextBreaker, type KeptBreaker } from './breaker-math.js';
import { calendarWindow } from './calendar.js';
import { budgetRefund, budgetSpend, bucketTake, windowAdd, type BucketRow, type CounterRow } from './counter-math.js';
import { EntryTable } from '../entry-table.js';
import { approvalPlace, type ApprovalIndexEntry, type ApprovalPage } from './approval-index.js';
import { StoreUnavailableError, type Answer, type BreakerAdmission, type BreakerSettings, type BreakerState, type BudgetCounter, type BudgetSpend, type CalendarWindow, type AuditAnchor, type AuditEntry, type AuditQuery, type AuditRecord, type IdempotencyClaim, type IdempotencyRecord, type Store, type TokenBucket, type TokenTake, type WindowCount } from './store.js';

// Run from the TypeScript sources (tests, through tsx) or from dist/: the worker is the sibling file, and
// from the sources it registers tsx's loader first (workers do not inherit it on Node 20).
/**
 * The longest a request waits for announced appends before it goes to the writer without them. An audited
 * answer already waits for a commit and its fsync; 2 ms more, only while other governed calls are under
 * way, buys fuller groups: at c=16 on the bench's minimal upstream the governed call cost 8% and 19% less
 * CPU than with 1 ms in two A/B runs, with the same p99 (bench/ab.ts, whose runs on the bench VM vary by up
 * to 9% on their own). Longer waits buy nothing more: with 2 ms a group already holds 12.5 of the 16 calls
 * in flight, with 4 and 8 ms 14.8 and 15.3, at the same CPU per call.
 */
const COMMIT_DELAY_MS = 2;
/** The longest a row change waits for a message to ride with before it is sent on its own. */
const DIRTY_FLUSH_MS = 50;

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL(FROM_SOURCES ? './sqlite-worker.ts' : './sqlite-worker.js', import.meta.url);

function newWorker(workerData: SqliteWorkerData): Worker {
  if (!FROM_SOURCES) return new Worker(WORKER_URL, { workerData });
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  return new Worker(`import(${tsx}).then((m) => { m.register(); return import(${JSON.stringify(WORKER_URL.href)}); })`, { eval: true, workerData });
}

export interface SqliteStoreOptions {
  /**
   * The file must already hold a Gatehouse store (the CLI's readers: `audit`, `budgets`): one that does not
   * (an empty file, another program's database) is refused when the writer starts, and left as it is,
   * instead of being made a store (WAL, every table) and read as an empty one.
   */
  existing?: boolean;
}

/** The first 16 bytes of every SQLite 3 database file (sqlite.org/fileformat.html §1.3.1). */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * The file's header, if it is a SQLite database's: its store format (user_version) with it. That is the
 * format last checkpointed into the file; one still in the -wal alone is found when the writer opens it.
 */
async function sqliteHeader(path: string): Promise<{ version: number } | undefined> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(HEADER_BYTES);
    const { bytesRead } = await file.read(head, 0, head.length, 0);
    if (bytesRead < SQLITE_HEADER.length || !head.subarray(0, SQLITE_HEADER.length).equals(SQLITE_HEADER)) return undefined;
    return { version: bytesRead === HEADER_BYTES ? headerVersion(head) : 0 };
  } finally {
    await file.close();
  }
}

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
  /** Makes the value the caller gets from the one the writer sent (an append's place comes as one string). */
  decode: ((value: unknown) => unknown) | undefined;
}

/** An append's place, as the writer sends it: `<seq>:<hash>` (sqlite-worker.ts's appendAudit). */
function anchorOf(value: unknown): AuditAnchor {
  const text = value as string;
  const colon = text.indexOf(':');
  return { seq: Number(text.slice(0, colon)), hash: text.slice(colon + 1) };
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private worker: Worker | undefined;
  /** Requests awaiting the writer's reply, by id (entry-table.ts says why not a Map). */
  private readonly pending = new EntryTable<Pending>();
  private nextId = 0;
  private outbox: WorkerRequest[] = [];
  /** Rows of windows, buckets, budgets and breakers this process holds (and is the only writer of). */
  private readonly rows = growingLru<string, { row: unknown }>(100_000);
  private readonly loading = new Map<string, Promise<unknown>>();
  /**
   * Row changes not yet sent to the writer, the latest per row. A new Map per message, not `clear()`: a
   * cleared Map keeps its old table linked to the new one (entry-table.ts says what that costs).
   */
  private dirty = new Map<string, unknown[]>();
  private dirtyTimer: NodeJS.Timeout | undefined;
  /** A message is with the writer and not answered yet. */
  private sent = false;
  /** How many requests the next message waits for (appends announced as coming soon), at most COMMIT_DELAY_MS. */
  private target = 0;
  private delay: NodeJS.Timeout | undefined;
  private soon: NodeJS.Immediate | undefined;
  private closed = false;
  /** A writer was started: something has used the store. */
  private started = false;
  /** The last audit entry time read, and its epoch ms (timeMs). */
  private lastTime = '';
  private lastTimeMs = 0;

  constructor(
    private readonly path: string,
    private readonly options: SqliteStoreOptions = {},
  ) {
    mkdirSync(dirname(path), { recursive: true });
  }

  private start(): Worker {
    this.started = true;
    const worker = newWorker({ path: this.path, existing: this.options.existing === true, ...this.readCopy() });
    worker.on('message', (replies: WorkerReplies) => {
      // What gathered during the commit goes next, by the same rule as after an idle spell: at once, unless
      // appends announced as coming are still missing, for which it waits at most COMMIT_DELAY_MS. A commit
      // costs about the same for one record as for twenty (a round trip to the writer thread, an fsync), so
      // fuller groups cost less per call (7% and 9% of a governed call's CPU at c=16 in two A/B runs, against
      // leaving with whatever gathered). A lone call announces nothing and is never held.
      this.sent = false;
      if (this.outbox.length > 0 || this.dirty.size > 0) this.scheduleSend();
      forEachReply(replies, (id, ok, value) => {
        const p = this.pending.take(id);
        if (!p) return;
        if (ok) p.resolve(p.decode === undefined ? value : p.decode(value));
        else p.reject(new StoreUnavailableError(`SQLite store: ${value as string}`));
      });
      if (this.pending.size === 0) worker.unref();
    });
    const died = (err: Error): void => {
      if (this.worker === worker) this.worker = undefined;
      this.sent = false;
      if (this.outbox.length > 0 && !this.closed) this.scheduleSend();
      for (const p of this.pending.takeAll()) {
        p.reject(new StoreUnavailableError(`SQLite store: the writer stopped (${writerFailure(err)})`, { cause: err }));
      }
    };
    worker.on('error', died);
    worker.on('exit', (code) => died(new Error(`exit code ${code}`)));
    // An idle writer does not keep the process alive; one with calls pending does (see call()).
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /**
   * A reader's private directory for a store it cannot read in place (sqlite-read-copy.ts), made at the
   * first start and removed by close. Readers only: the gateway's store is never copied.
   */
  private copyDir: string | undefined;
  private readCopy(): { copyTo?: string } {
    if (this.options.existing !== true || !needsPrivateCopy(this.path)) return {};
    this.copyDir ??= mkdtempSync(join(tmpdir(), 'gatehouse-read-'));
    return { copyTo: this.copyDir };
  }

  private call<T>(op: string, ...args: unknown[]): Promise<T> {
    return this.callDecoded<T>(undefined, op, ...args);
  }

  /** `call`, the writer's value made into the caller's by `decode`. */
  private callDecoded<T>(decode: ((value: unknown) => T) | undefined, op: string, ...args: unknown[]): Promise<T> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('SQLite store: closed'));
    const worker = this.worker ?? this.start();
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      if (this.pending.size === 0) worker.ref();
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, decode });
      this.outbox.push({ id, op, args });
      this.scheduleSend();
    });
  }

  /**
   * Group commit. One message is with the writer at a time: what is asked for meanwhile goes together as
   * the next (one postMessage, one commit, one fsync for all of it). With the writer idle, or just done with
   * a commit, it goes at the next turn, unless appends were announced (calls still running, see
   * Store.appendAudit): then it waits for them, at most COMMIT_DELAY_MS. Under load that divides a commit's
   * cost by the calls in flight; a lone call is never held.
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
    const dirty = this.takeDirty();
    const requests = [...(dirty ? [dirty] : []), ...this.outbox.filter((r) => this.pending.has(r.id))];
    this.outbox = [];
    this.target = 0;
    if (requests.length === 0) return;
    if (this.closed && this.worker === undefined) {
      for (const r of requests) this.fail(r.id, new StoreUnavailableError('SQLite store: closed'));
      return;
    }
    this.sent = true;
    (this.worker ?? this.start()).postMessage(encodeRequests(requests));
  }

  /** The rows changed since the last message, as one write that goes first in the next (coalesced per row). */
  private takeDirty(): WorkerRequest | undefined {
    clearTimeout(this.dirtyTimer);
    this.dirtyTimer = undefined;
    if (this.dirty.size === 0) return undefined;
    const writes = [...this.dirty];
    this.dirty = new Map();
    const id = ++this.nextId;
    // A write that fails makes those rows be read from the file again next time.
    this.pending.set(id, { resolve: () => {}, reject: () => writes.forEach(([held]) => this.rows.delete(held)), decode: undefined });
    return { id, op: 'putMany', args: [writes.map(([, write]) => write)] };
  }

  private fail(id: number, err: Error): void {
    const p = this.pending.take(id);
    if (!p) return;
    p.reject(err);
  }

  /**
   * A write by the writer (sqlite-worker.ts: one row of its own table), committed as every other; until the
   * store is first used, a check of what the writer will need instead, so that readiness probes (every few
   * seconds) do not start a writer nothing else needs.
   */
  async ping(): Promise<void> {
    if (!this.started && !this.closed) return this.openable();
    await this.call('ping');
  }

  /**
   * The directory can take the file and its WAL; the file, if there, is a SQLite database (or empty) this
   * process can read and write.
   */
  private async openable(): Promise<void> {
    try {
      await access(dirname(this.path), constants.W_OK | constants.X_OK);
      const file = await stat(this.path).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
      if (file === undefined) return;
      if (!file.isFile()) throw new Error(`${this.path} is not a file`);
      await access(this.path, constants.R_OK | constants.W_OK);
      // An empty file becomes a database; any other must already be one, or the writer fails on it later;
      // and one this Gatehouse can read (a newer one's store is refused, before any call finds it so).
      if (file.size === 0) return;
      const header = await sqliteHeader(this.path);
      if (header === undefined) throw new Error(`${this.path} is not a SQLite database`);
      const refused = refusedVersion(this.path, header.version);
      if (refused !== undefined) throw new Error(refused);
    } catch (err) {
      throw new StoreUnavailableError(`SQLite store: ${(err as Error).message}`, { cause: err });
    }
  }

  // Windows, buckets, budgets and breakers. One SQLite file serves one process, so this process holds the
  // rows it has touched and decides in the main thread, without a round trip; every change goes to the
  // writer at once, without waiting. The writer applies messages in order, so a change is on disk before
  // anything asked for after it (the call's audit record, which its answer waits for) is.

  addToWindow(key: string, amount: number, windowMs: number): Promise<WindowCount> {
    return this.update<CounterRow, WindowCount>(`c|${key}`, 'readCounter', key, (current) => {
      const { row, result } = windowAdd(current, amount, windowMs, Date.now());
      return { row, result, write: ['putCounter', key, row.total, row.resetsAt] };
    });
  }

  takeTokens(key: string, bucket: TokenBucket, cost: number): Answer<TokenTake> {
    return this.answer<BucketRow, TokenTake>(`b|${key}`, 'readBucket', key, (current) => {
      const { row, expiresAt, result } = bucketTake(current, bucket, cost, Date.now());
      return { row, result, write: ['putBucket', key, row.tokens, row.updatedAt, expiresAt] };
    });
  }

  spendBudget(key: string, amount: number, limit: number, window: CalendarWindow): Answer<BudgetSpend> {
    const now = Date.now();
    const { start, end } = calendarWindow(now, window);
    const rowKey = `${key}|${start}`;
    return this.answer<CounterRow, BudgetSpend>(`c|${rowKey}`, 'readCounter', rowKey, (current) => {
      const { row, result: spent } = budgetSpend(current, amount, limit, end, now);
      const result = { ...spent, resetsInMs: end - now };
      return row === undefined ? { result } : { row, result, write: ['putCounter', rowKey, row.total, row.resetsAt] };
    });
  }

  refundBudget(key: string, amount: number, window: CalendarWindow, resetsAt: number): Promise<void> {
    // The window the spend fell in: the one that ends at resetsAt.
    const { start, end } = calendarWindow(resetsAt - 1, window);
    if (end !== resetsAt || Date.now() >= end) return Promise.resolve();
    const rowKey = `${key}|${start}`;
    return this.update<CounterRow, void>(`c|${rowKey}`, 'readCounter', rowKey, (current) => {
      const row = budgetRefund(current, amount, Date.now());
      return row === undefined ? { result: undefined } : { row, result: undefined, write: ['putCounter', rowKey, row.total, row.resetsAt] };
    });
  }

  listBudgets(prefix: string): Promise<BudgetCounter[]> {
    return this.call('listBudgets', prefix);
  }

  // A held breaker row carries its expiry: past it the breaker is forgotten, as Redis forgets an expired key
  // (once the held row lived on, and failures an hour apart added up here but not on Redis).
  breakerAdmit(key: string, settings: BreakerSettings): Answer<BreakerAdmission> {
    return this.answer<KeptBreaker, BreakerAdmission>(`k|${key}`, 'readBreaker', key, (kept) => {
      const now = Date.now();
      const current = liveBreaker(kept, now);
      const { admission, next } = nextBreaker.admit(current, now, settings);
      if (next === undefined || next === current) return { result: admission };
      const expiresAt = now + breakerLifetimeMs(settings);
      return { row: { doc: next, expiresAt }, result: admission, write: ['putBreaker', key, next, expiresAt] };
    });
  }

  breakerRecord(key: string, ok: boolean, settings: BreakerSettings, probe?: number): Promise<BreakerState> {
    return this.update<KeptBreaker, BreakerState>(`k|${key}`, 'readBreaker', key, (kept) => {
      const now = Date.now();
      const next = nextBreaker.record(liveBreaker(kept, now), ok, now, settings, probe);
      const expiresAt = now + breakerLifetimeMs(settings);
      return { row: { doc: next, expiresAt }, result: next.state, write: ['putBreaker', key, next, expiresAt] };
    });
  }

  breakerRelease(key: string, settings: BreakerSettings, probe: number): Promise<void> {
    return this.update<KeptBreaker, void>(`k|${key}`, 'readBreaker', key, (kept) => {
      const now = Date.now();
      const next = nextBreaker.release(liveBreaker(kept, now), now, probe);
      if (next === undefined) return { result: undefined };
      const expiresAt = now + breakerLifetimeMs(settings);
      return { row: { doc: next, expiresAt }, result: undefined, write: ['putBreaker', key, next, expiresAt] };
    });
  }

  /**
   * Reads the row this process holds under `held` (from the file the first time), decides, keeps the new
   * row and sends it to the writer without waiting, all in one synchronous step after the read: concurrent
   * callers each see the row as the one before left it. A write that fails makes the row be read again.
   * A held row (every call after a key's first) is decided and answered at once, with one look-up in the
   * held rows (its holder is changed in place); may throw.
   */
  private answer<T, R>(held: string, read: string, key: string, change: (row: T | undefined) => { row?: T; result: R; write?: unknown[] }): Answer<R> {
    const holder = this.rows.get(held);
    if (holder === undefined) return this.load(held, read, key).then(() => this.decide(held, this.rows.get(held), change));
    return this.decide(held, holder, change);
  }

  /** `answer`, always as a promise (for the operations whose callers take one). */
  private update<T, R>(held: string, read: string, key: string, change: (row: T | undefined) => { row?: T; result: R; write?: unknown[] }): Promise<R> {
    try {
      return Promise.resolve(this.answer(held, read, key, change));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private decide<T, R>(held: string, holder: { row: unknown } | undefined, change: (row: T | undefined) => { row?: T; result: R; write?: unknown[] }): R {
    const { row, result, write } = change(holder?.row as T | undefined);
    if (row !== undefined && write !== undefined) {
      if (holder !== undefined) holder.row = row;
      else this.rows.set(held, { row });
      // Rides with the next message (the call's audit append, usually); a quiet store writes it soon anyway.
      this.dirty.set(held, write);
      this.dirtyTimer ??= setTimeout(() => {
        this.dirtyTimer = undefined;
        if (this.dirty.size > 0) this.scheduleSend();
      }, DIRTY_FLUSH_MS);
    }
    return result;
  }

  /** Reads a row from the file into the held rows, once for concurrent first callers. */
  private load(held: string, read: string, key: string): Promise<unknown> {
    let loading = this.loading.get(held);
    if (loading === undefined) {
      loading = this.call(read, key).then((row) => {
        // A row set while the read was under way is newer than the file's.
        if (!this.rows.has(held)) this.rows.set(held, { row });
      });
      this.loading.set(held, loading);
      void loading.finally(() => this.loading.delete(held)).catch(() => {});
    }
    return loading;
  }

  claimIdempotency(key: string, digest: string, owner: string, leaseMs: number, ttlMs: number): Promise<IdempotencyClaim> {
    return this.call('claimIdempotency', key, digest, owner, leaseMs, ttlMs);
  }

  renewIdempotency(key: string, owner: string, leaseMs: number): Promise<void> {
    return this.call('renewIdempotency', key, owner, leaseMs);
  }

  completeIdempotency(key: string, owner: string, response: string, ttlMs: number): Promise<boolean> {
    return this.call('completeIdempotency', key, owner, response, ttlMs);
  }

  releaseIdempotency(key: string, owner: string): Promise<void> {
    return this.call('releaseIdempotency', key, owner);
  }

  readIdempotency(key: string): Promise<IdempotencyRecord | undefined> {
    return this.call('readIdempotency', key);
  }

  putApproval(id: string, doc: string, ttlMs: number, index?: ApprovalIndexEntry): Promise<void> {
    // The entry goes flat (sqlite-wire.ts), its place made here: the writer only stores it.
    if (index === undefined) return this.call('putApproval', id, doc, ttlMs);
    return this.call('putApproval', id, doc, ttlMs, index.caller, approvalPlace(index.createdAt, id), index.pendingUntil, index.liveUntil);
  }

  getApproval(id: string): Promise<string | undefined> {
    return this.call('getApproval', id);
  }

  listApprovals(): Promise<string[]> {
    return this.call('listApprovals');
  }

  scanApprovals(cursor: string | undefined, count: number): Promise<{ docs: string[]; next: string | undefined }> {
    // The cursor is the last rowid given; one that is not (from outside) starts again from the first.
    const after = cursor !== undefined && /^[0-9]{1,16}$/.test(cursor) ? Number(cursor) : 0;
    return this.call('scanApprovals', after, count);
  }

  indexApproval(id: string, index: ApprovalIndexEntry, ttlMs: number, doc?: string): Promise<void> {
    return this.call('indexApproval', id, index.caller, approvalPlace(index.createdAt, id), index.pendingUntil, ttlMs, index.liveUntil, doc);
  }

  expiredApprovals(now: number): Promise<string[]> {
    return this.call('expiredApprovals', now);
  }

  unindexedApprovals(since: number): Promise<string[]> {
    return this.call('unindexedApprovals', since);
  }

  pendingApprovalsOf(caller: string): Promise<string[]> {
    return this.call('pendingApprovalsOf', caller);
  }

  listApprovalPage(after: string | undefined, limit: number, pendingOnly = false): Promise<ApprovalPage> {
    return this.call('listApprovalPage', after ?? '', limit, pendingOnly);
  }

  countPendingApprovals(): Promise<number> {
    return this.call('countPendingApprovals');
  }

  putPin(id: string, doc: string, ttlMs: number): Promise<void> {
    return this.call('putPin', id, doc, ttlMs);
  }

  listPins(): Promise<string[]> {
    return this.call('listPins');
  }

  unindexedPins(): Promise<string[]> {
    return this.call('unindexedPins');
  }

  listPinPage(after: string | undefined, limit: number): Promise<ApprovalPage> {
    return this.call('listPinPage', after ?? '', limit);
  }

  indexPin(id: string): Promise<void> {
    return this.call('indexPin', id);
  }

  appendAudit(entry: AuditEntry, more = 0): Promise<AuditAnchor> {
    // This append, the ones already waiting, and those announced: send when they are all in.
    this.target = Math.max(this.target, this.outbox.length + 1 + more);
    // The canonical JSON is made on this thread (by the entry's maker, usually): the writer only chains it,
    // and a string crosses threads cheaply.
    return this.callDecoded(anchorOf, 'appendAudit', entryJson(entry), this.timeMs(entry.time));
  }

  /**
   * An entry's time in epoch ms, for the writer's time index. Entries made in the same millisecond share
   * their time's text (logger.ts's isoNow), and a busy gateway makes several per millisecond: the last one
   * read is kept, instead of Date.parse for each.
   */
  private timeMs(time: string): number {
    if (time !== this.lastTime) {
      this.lastTime = time;
      this.lastTimeMs = Date.parse(time);
    }
    return this.lastTimeMs;
  }

  readAudit(query: AuditQuery): Promise<AuditRecord[]> {
    return this.call('readAudit', query);
  }

  auditAnchor(): Promise<AuditAnchor | undefined> {
    return this.call('auditAnchor');
  }

  auditLastSeq(): Promise<number> {
    return this.call('auditLastSeq');
  }

  pruneAudit(beforeMs: number): Promise<number> {
    return this.call('pruneAudit', beforeMs);
  }

  /** Lets the operations already sent finish (at most 5 s), then stops the writer. */
  async close(): Promise<void> {
    this.closed = true;
    // Row changes still waiting for a message go now.
    if (this.dirty.size > 0 && !this.sent && this.worker !== undefined) this.send();
    for (let waited = 0; this.pending.size > 0 && waited < 5_000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
    if (this.copyDir !== undefined) rmSync(this.copyDir, { recursive: true, force: true });
  }
}

// What the writer's SQLite codes mean to an operator. An error thrown in the writer thread crosses to this one
// as its own properties only: a SqliteError arrives as `{ code }`, without a message, which read "(undefined)".
const SQLITE_CODES: Record<string, string> = {
  SQLITE_NOTADB: 'the file is not a SQLite database',
  SQLITE_CANTOPEN: 'the file cannot be opened: a directory, or a path this user may not use',
  SQLITE_CORRUPT: 'the database is damaged',
  SQLITE_READONLY: 'the file is read-only to this user',
  SQLITE_FULL: 'the disk is full',
  SQLITE_IOERR: 'the disk could not be read or written',
};

/** The reason a writer stopped, in words: what its SQLite code means, SQLite's own message, and the code. */
function writerFailure(err: unknown): string {
  const { message, code } = (typeof err === 'object' && err !== null ? err : {}) as { message?: unknown; code?: unknown };
  // An extended code (SQLITE_IOERR_WRITE) means what its primary one does.
  const known = typeof code === 'string' ? SQLITE_CODES[code.split('_').slice(0, 2).join('_')] : undefined;
  const said = typeof message === 'string' && message !== '' ? message : undefined;
  if (typeof code !== 'string') return said ?? String(err);
  const detail = said !== undefined ? `${said} (${code})` : code;
  return known !== undefined ? `${known}: ${detail}` : detail;
}
