// The one interface to state that must survive a restart or be shared between replicas (DESIGN.md §1):
// counters and token buckets with expiry, idempotency records, approvals and the audit log. Two real
// implementations: SQLite (one file, the embedded default) and Redis (shared by replicas). Nothing else in
// Gatehouse keeps such state. Every operation can fail (the store is down); callers fail closed.

import type { ApprovalIndexEntry, ApprovalPage } from './approval-index.js';

/** A fixed window counter: the total after this addition, and when the window ends (epoch ms). */
export interface WindowCount {
  total: number;
  resetsAt: number;
}

export interface TokenBucket {
  /** Tokens added per `perMs`. */
  rate: number;
  perMs: number;
  /** The most tokens the bucket holds (and holds when new). */
  burst: number;
}

export interface TokenTake {
  allowed: boolean;
  /** Tokens left after this take (or before it, when refused). */
  remaining: number;
  /** When refused: how long until enough tokens are back. */
  retryAfterMs: number;
}

/** A calendar window in UTC: its budget counter starts again when it ends. */
export type CalendarWindow = 'minute' | 'hour' | 'day' | 'month';

/** What spending from a budget found. */
export interface BudgetSpend {
  /** False: the spend would pass the limit, and nothing was spent. */
  allowed: boolean;
  /** Units spent in the window, this spend included when allowed. */
  used: number;
  /** When the window ends (epoch ms). */
  resetsAt: number;
  /**
   * How long until then, on the store's clock (Redis': a replica whose own clock is off would tell a
   * refused caller to wait too long, or to retry into another refusal).
   */
  resetsInMs: number;
}

/** A budget counter as `gatehouse budgets show` reads it. */
export interface BudgetCounter {
  key: string;
  used: number;
  resetsAt: number;
}

export interface BreakerSettings {
  consecutiveFailures: number;
  /** Share of failures in the window that opens the circuit (with at least minCalls calls); undefined: off. */
  errorRate?: number;
  minCalls: number;
  windowMs: number;
  coolDownMs: number;
}

/** A breaker's answer to "may this call go?". */
export type BreakerAdmission =
  | { verdict: 'closed' }
  /**
   * Cool-down over: this call is the one probe; its outcome, recorded with `probe`, closes or reopens the
   * circuit (no other outcome does while it is out).
   */
  | { verdict: 'probe'; probe: number }
  | { verdict: 'open'; retryAfterMs: number };

export type BreakerState = 'closed' | 'open' | 'half_open';

/** An idempotency record: a call under way (`owner` holds it until `leaseUntil`), or its stored answer. */
export type IdempotencyRecord =
  | { state: 'in_flight'; digest: string; owner: string; leaseUntil: number }
  | { state: 'done'; digest: string; response: string };

/** What claiming a key found. */
export type IdempotencyClaim =
  /** The key was free: this caller runs the call and must complete (or release) it. */
  | { outcome: 'claimed' }
  | { outcome: 'existing'; record: IdempotencyRecord };

/** An audit record as the pipeline hands it to the store; the store numbers and chains it. */
export interface AuditEntry {
  time: string;
  callId: string;
  runId: string;
  subject: string;
  tenant?: string;
  keyId?: string;
  tokenId?: string;
  toolRef?: string;
  tool?: string;
  method: string;
  /** SHA-256 (hex) of the canonical arguments. */
  argumentsSha256?: string;
  /** The arguments with secrets redacted. */
  arguments?: unknown;
  outcome: string;
  refusal?: string;
  stage?: string;
  upstream?: string;
  latencyMs: number;
  approvalId?: string;
  idempotencyKey?: string;
  /** The policy entry that refused the call (or asked for its approval), by id. */
  rule?: string;
  /** Approval records: who decided, their reason, and which of the approved runs this is. */
  reviewer?: string;
  reason?: string;
  run?: number;
}

/** A stored audit record: the entry, its place in the chain, and the chain's hashes. */
export interface AuditRecord extends AuditEntry {
  seq: number;
  /** SHA-256 (hex) of the previous record (or of the anchor), 64 zeros for the first. */
  prev: string;
  /** SHA-256 (hex) of `prev` and this record's canonical JSON without `hash`. */
  hash: string;
}

/** A place in the chain: where a pruned chain starts again, or where an append landed. */
export interface AuditAnchor {
  seq: number;
  hash: string;
}

export interface AuditQuery {
  afterSeq?: number;
  /** Epoch ms, inclusive. */
  since?: number;
  until?: number;
  limit?: number;
  /**
   * Stop once the records given hold this many characters of stored text (at least one record is given):
   * a reader walking the whole log holds a page at a time, and records are as large as a call's arguments
   * (up to listen.maxBodyBytes each), so a page counted in records alone is not bounded in memory. A page
   * cut short by it is no sign of the log's end; an empty page is.
   */
  maxBytes?: number;
}

/**
 * An operation's answer, or a promise of it. Each call a rate limit and a budget check ask the store once;
 * when the answer is known at once, an awaited promise would cost two promises and a turn of the microtask
 * queue for nothing.
 */
export type Answer<T> = T | Promise<T>;

export interface Store {
  readonly kind: 'sqlite' | 'redis';
  /** Resolves when the store answers and can write; rejects with the reason otherwise. */
  ping(): Promise<void>;

  /** Adds to the counter `key` in its fixed window of `windowMs` (aligned to the epoch, UTC). */
  addToWindow(key: string, amount: number, windowMs: number): Promise<WindowCount>;
  /**
   * Takes `cost` tokens from the bucket `key`, refilled by the store's own clock. Answered at once (not a
   * promise) when the store decides it without waiting: the SQLite store, on a row it already holds.
   */
  takeTokens(key: string, bucket: TokenBucket, cost: number): Answer<TokenTake>;
  /**
   * Spends `amount` from the budget `key` in the current calendar window (UTC, on the store's clock), unless
   * that would pass `limit`: then nothing is spent. Atomic across replicas. Answered at once as takeTokens is.
   */
  spendBudget(key: string, amount: number, limit: number, window: CalendarWindow): Answer<BudgetSpend>;
  /**
   * Gives back `amount` that spendBudget spent in the window ending at `resetsAt` (its answer's), for a call
   * that did not run after all. Never below zero; nothing once that window has ended.
   */
  refundBudget(key: string, amount: number, window: CalendarWindow, resetsAt: number): Promise<void>;
  /** The budget counters of current windows whose key starts with `prefix`. */
  listBudgets(prefix: string): Promise<BudgetCounter[]>;

  /**
   * Whether a call may pass the breaker `key` now; after the cool-down exactly one caller gets the probe.
   * Answered at once as takeTokens is.
   */
  breakerAdmit(key: string, settings: BreakerSettings): Answer<BreakerAdmission>;
  /**
   * Records a call's outcome; returns the breaker's state after it. `probe`: the number breakerAdmit gave
   * the call, if it was a probe; while half-open, only the current probe's outcome counts.
   */
  breakerRecord(key: string, ok: boolean, settings: BreakerSettings, probe?: number): Promise<BreakerState>;
  /**
   * Gives back the probe `probe` that never asked the upstream (a later stage held its call back): the
   * circuit stays half-open and the next call probes at once. Nothing when another probe is current.
   */
  breakerRelease(key: string, settings: BreakerSettings, probe: number): Promise<void>;

  /**
   * Claims an idempotency key for `digest` (the canonical request), or tells what holds it. Atomic: of two
   * concurrent claims exactly one gets `claimed`.
   */
  claimIdempotency(key: string, digest: string, owner: string, leaseMs: number, ttlMs: number): Promise<IdempotencyClaim>;
  /** Extends the lease of a claimed key whose call is still running. */
  renewIdempotency(key: string, owner: string, leaseMs: number): Promise<void>;
  /** Stores the answer of a claimed key; the record then lives `ttlMs`. */
  /** False when the key is no longer this owner's running call: the answer was not stored. */
  completeIdempotency(key: string, owner: string, response: string, ttlMs: number): Promise<boolean>;
  /** Frees a claimed key whose call never reached the upstream, so a retry may run it. */
  releaseIdempotency(key: string, owner: string): Promise<void>;
  readIdempotency(key: string): Promise<IdempotencyRecord | undefined>;

  /**
   * Stores (replaces) a JSON document under `{approvals}` by id (used by approvals and pins). An approval's
   * `index` entry is stored (replaced) with it, in the same write: what pendingApprovalsOf and
   * listApprovalPage find it by.
   */
  putApproval(id: string, doc: string, ttlMs: number, index?: ApprovalIndexEntry): Promise<void>;
  getApproval(id: string): Promise<string | undefined>;
  /** Every document under `{approvals}`, approvals, pins and the rest: read whole, so for the rare reader. */
  listApprovals(): Promise<string[]>;
  /**
   * Every document under `{approvals}` a slice at a time (about `count`): from `cursor` (undefined to begin),
   * to be called again with `next` until it is undefined. Each document stored throughout is given at least
   * once. For the start-up reindexes, which once read the whole store in one piece.
   */
  scanApprovals(cursor: string | undefined, count: number): Promise<{ docs: string[]; next: string | undefined }>;
  /**
   * Adds the index entry of an approval stored without one (before the index existed); an entry already
   * there is kept (it came with a later write of the document). Lives `ttlMs`, as its document. The entry
   * in the expiry sweep's index (liveUntil) is set only while `doc`, the document the entry was made from,
   * is still the one stored: a decision saved since took it out, and a stale read must not put it back.
   */
  indexApproval(id: string, index: ApprovalIndexEntry, ttlMs: number, doc?: string): Promise<void>;
  /**
   * The documents of indexed approvals whose liveUntil is in (0, `now`]: past their deadline while they could
   * still be pending or used, what the expiry sweep reads (by an index ordered by deadline, not every document).
   */
  expiredApprovals(now: number): Promise<string[]>;
  /**
   * The documents of approvals that may have been stored without their index entries since `since` (epoch
   * ms), by a replica on an older version during a rolling upgrade. Redis: every approval put since then (the
   * put-time index every version keeps). SQLite, which serves one process: the approvals without an expiry
   * entry, as no other version writes while this one runs.
   */
  unindexedApprovals(since: number): Promise<string[]>;
  /** The documents of `caller`'s approvals that may be pending: indexed with their pendingUntil still ahead. */
  pendingApprovalsOf(caller: string): Promise<string[]>;
  /**
   * Up to `limit` indexed approvals placed after `after` (a page's `at`), in the order they were opened;
   * `pendingOnly`, only those that may be pending (a listing of pending ones reads no decided ones).
   */
  listApprovalPage(after: string | undefined, limit: number, pendingOnly?: boolean): Promise<ApprovalPage>;
  /** How many indexed approvals, of every caller, may be pending now (their pendingUntil still ahead). */
  countPendingApprovals(): Promise<number>;
  /** Stores (replaces) a tool pin under `{approvals}` as putApproval does, and keeps it in the set listPins reads. */
  putPin(id: string, doc: string, ttlMs: number): Promise<void>;
  /** The documents stored by putPin (or added by indexPin), without reading the rest of `{approvals}`. */
  listPins(): Promise<string[]>;
  /**
   * Up to `limit` of those pins, by id (byte order), after the id `after`; each item's `at` is its id, the
   * place to list on from, and `next` is undefined once the set has ended (GET /pins a page at a time).
   */
  listPinPage(after: string | undefined, limit: number): Promise<ApprovalPage>;
  /** Adds a document stored before the pins' set existed (by putApproval) to it, for as long as it lives. */
  indexPin(id: string): Promise<void>;
  /**
   * The ids of pins (`pin:…`) stored without their place in the pins' set, as a replica on an older version
   * stores them during a rolling upgrade. Redis: among the documents put since `since` (the put-time index
   * every version keeps). SQLite: all of them (pins are few, one per tool, and found by their ids' range).
   */
  unindexedPins(since: number): Promise<string[]>;

  /**
   * Appends one record to the hash chain; durable when the promise resolves, which names its place.
   * `more`: how many other appends the caller expects soon (calls still running); a store may hold this
   * one a moment to make them durable together (one commit instead of several).
   */
  appendAudit(entry: AuditEntry, more?: number): Promise<AuditAnchor>;
  readAudit(query: AuditQuery): Promise<AuditRecord[]>;
  /** The anchor the chain starts from after retention, if any record was ever pruned. */
  auditAnchor(): Promise<AuditAnchor | undefined>;
  /**
   * Where the log ends now: the place of its last record (as the store keeps it), else the anchor's seq,
   * else 0. One read, for `audit tail`, which follows from there.
   */
  auditLastSeq(): Promise<number>;
  /** Removes records older than `beforeMs` (epoch), keeping the chain verifiable from a new anchor. */
  pruneAudit(beforeMs: number): Promise<number>;

  close(): Promise<void>;
}

/** Thrown by a store that cannot serve now; the pipeline answers GW_ERR_STATE_UNAVAILABLE. */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}
