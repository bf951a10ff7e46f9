// The approvals, in the store, shared by every replica. A call that needs approval finds (or opens) the
// approval bound to exactly it; reviewers decide through the admin API; an approved call claims one of its
// `reuse` runs atomically, so concurrent identical retries run it once. Every step is an audit record
// carrying the approval id: proposed, approved, rejected, expired, executed (and the call's own record,
// which says what it returned); a decision refused for who asked (not a reviewer of the rule, or approving
// one's own call) is recorded `refused`.
//
// Ids are derived from the binding and a generation, so two replicas opening the approval for the same
// call at once open the same one; a claim in the store decides which of them records it.
//
// One caller may have at most `maxPending` approvals waiting for a decision (approvals.maxPendingPerCaller):
// each one sits in the store and in the reviewers' inbox until its deadline, so without a bound one caller
// could fill both. The count is read from the store, so it covers every replica.

import { createHash, randomUUID } from 'node:crypto';
import { redactValue } from '../log/logger.js';
import type { Principal } from '../pipeline/principal.js';
import { principalKey } from '../pipeline/principal.js';
import type { Route } from '../pipeline/context.js';
import { canonicalJson } from '../protocol/canonical-json.js';
import type { ApprovalIndexEntry, ApprovalPage } from '../store/approval-index.js';
import type { AuditEntry, IdempotencyClaim, IdempotencyRecord } from '../store/store.js';
import { effectiveState, isApproval, type Approval, type ApprovalState } from './approval.js';
import { ArgumentsKey } from './arguments-key.js';
import type { DecisionRefusal } from './reviewer-rights.js';
import type { CompiledApprovalRule } from './rules.js';
import { eachStored, parseStored as parse } from './stored-documents.js';

/** How long a decided approval stays readable after its deadline (for reviewers and the CLI). */
const RETAIN_MS = 7 * 86_400_000;
/** The store's atomic claim stands in for a lock: a decision's or an opening's is never renewed, so the lease is its whole life. */
const CLAIM_LEASE_MS = 60_000;
/**
 * An approved run's claim is renewed while its call runs (holdRun), so a run longer than its lease still
 * counts as under way; a replica that dies stops renewing, and its run is taken for ended after this long.
 */
const RUN_LEASE_MS = 60_000;
/** No run is held longer than this (a call whose end was never seen must not hold its claim for ever). */
const MAX_RUN_HOLD_MS = 24 * 3_600_000;
/** A caller's identical calls follow one chain of approvals at most this far per call (each link used up). */
const MAX_LINKS = 4;

/** The store operations approvals use; each fails closed (the caller passes them through the store guard). */
export interface ApprovalStore {
  /** Stores a document; an approval's with its index entry (approval-index.ts), in the same write. */
  put(id: string, doc: string, ttlMs: number, index?: ApprovalIndexEntry): Promise<void>;
  get(id: string): Promise<string | undefined>;
  /** Every document, approvals and the rest, read whole: for tests and tools, never on a path that serves. */
  list(): Promise<string[]>;
  /** Every document a slice at a time (Store.scanApprovals): for reindex, once per start. */
  scan(cursor: string | undefined, count: number): Promise<{ docs: string[]; next: string | undefined }>;
  /**
   * Indexes an approval stored before the index existed (kept as it is when it has an entry already); `doc`
   * is the document the entry was made from, and no sweep entry is made unless it is still the one stored.
   */
  index(id: string, entry: ApprovalIndexEntry, ttlMs: number, doc: string): Promise<void>;
  /** The documents of indexed approvals whose liveUntil is past `now`: what the expiry sweep reads. */
  expired(now: number): Promise<string[]>;
  /** The documents of approvals put since `since` that may lack an index entry (Store.unindexedApprovals). */
  unindexedSince(since: number): Promise<string[]>;
  /** The documents of a caller's approvals that may be pending (by the index). */
  pendingOf(caller: string): Promise<string[]>;
  /** A page of approvals in the order they were opened, after the place `after` (by the index). */
  page(after: string | undefined, limit: number, pendingOnly?: boolean): Promise<ApprovalPage>;
  /** How many approvals of every caller may be pending now (by the index). */
  countPending(): Promise<number>;
  claim(key: string, digest: string, owner: string, leaseMs: number, ttlMs: number): Promise<IdempotencyClaim>;
  /** What holds a claim, if anything. */
  read(key: string): Promise<IdempotencyRecord | undefined>;
  /** Frees a claim this owner holds. */
  release(key: string, owner: string): Promise<void>;
  /** Marks a claim this owner holds as done (its run reached the upstream); false when it is not the owner's. */
  complete(key: string, owner: string, response: string, ttlMs: number): Promise<boolean>;
  /** Extends the lease of a claim this owner holds (an approved run still under way). */
  renew?(key: string, owner: string, leaseMs: number): Promise<void>;
  audit(entry: AuditEntry): Promise<unknown>;
}

export interface CallToApprove {
  callId: string;
  principal: Principal;
  route: Route;
  args: Record<string, unknown>;
  rule: CompiledApprovalRule;
  policyVersion: string;
}

export type ApprovalVerdict =
  /** Not decided yet (just opened, or opened by an earlier identical call). */
  | { kind: 'pending'; approval: Approval; opened: boolean }
  /** Approved: this call is run number `run` of `approval.reuse`. */
  | { kind: 'run'; approval: Approval; run: number }
  /**
   * Approved, and every run is taken, at least one by a call still under way: this call is not run, and
   * the approval is not used up, since that run may yet be given back (a later stage refusing it).
   */
  | { kind: 'busy'; approval: Approval }
  | { kind: 'rejected'; approval: Approval }
  | { kind: 'expired'; approval: Approval }
  /** A new approval was needed, and the caller already has `limit` (or more) waiting: none was opened. */
  | { kind: 'limited'; limit: number; pending: number };

/** How many approvals one caller may have waiting at once; undefined sets no bound. */
export interface OpenLimits {
  maxPending?: number;
}

export type DecisionProblem = 'not_found' | 'not_pending' | 'invalidated' | DecisionRefusal | 'preview_mismatch' | 'expired';

export interface DecisionEvents {
  /** A decision was recorded (approved or rejected by a reviewer or the user, or an expiry noticed). */
  decided?(decision: 'approved' | 'rejected' | 'expired'): void;
}

/** A call's binding and the digests of its arguments (see ApprovalBook.bindingOf). */
export interface CallDigests {
  binding: string;
  argumentsSha256: string;
  argumentsDigest: string;
}

export class ApprovalBook {
  constructor(
    private readonly store: ApprovalStore,
    private readonly events: DecisionEvents = {},
    private readonly now: () => number = Date.now,
  ) {
    this.argumentsKey = new ArgumentsKey(store);
  }

  private readonly argumentsKey: ArgumentsKey;

  /** Per caller, the opening under way on this replica: a caller's openings here are counted one at a time. */
  private readonly opening = new Map<string, Promise<unknown>>();

  /**
   * The binding of a call: the same caller, upstream, tool, arguments and policy version give the same one.
   * It is made from the keyed digest of the arguments (ArgumentsKey), since approval ids derive from it and
   * reviewers see them; the plain SHA-256 is kept for the audit records, which reviewers do not see.
   */
  async bindingOf(call: Omit<CallToApprove, 'callId' | 'rule'>): Promise<CallDigests> {
    const canonical = canonicalJson(call.args);
    const argumentsDigest = await this.argumentsKey.digest(canonical);
    const binding = sha256(canonicalJson({ caller: principalKey(call.principal), upstream: call.route.upstream, ref: call.route.ref, arguments: argumentsDigest, policy: call.policyVersion }));
    return { binding, argumentsSha256: sha256(canonical), argumentsDigest };
  }

  /**
   * What the approval of this exact call says now; opens one when there is none to wait for and the caller
   * is within `limits.maxPending`. A call that finds its pending approval never counts as one more.
   */
  async forCall(call: CallToApprove, limits: OpenLimits = {}): Promise<ApprovalVerdict> {
    const digests = await this.bindingOf(call);
    const { binding, argumentsSha256 } = digests;
    const pointer = parse(await this.store.get(pointerId(binding))) as { generation?: number } | undefined;
    let generation = typeof pointer?.generation === 'number' ? pointer.generation : 0;
    for (let link = 0; link < MAX_LINKS; link++, generation++) {
      const id = approvalId(binding, generation);
      const found = await this.get(id);
      if (found === undefined) return this.openWithin(limits, call, generation, digests);
      const state = effectiveState(found, this.now());
      if (state === 'pending') return { kind: 'pending', approval: found, opened: false };
      if (state === 'approved') {
        let underWay = false;
        for (let run = 1; run <= found.reuse; run++) {
          const claim = await this.store.claim(runKey(id, run), argumentsSha256, call.callId, RUN_LEASE_MS, this.ttl(found));
          if (claim.outcome === 'claimed') return { kind: 'run', approval: found, run };
          // Taken by a call still in its lease that has not reached the upstream yet (ranRun completes the claim).
          if (claim.record.state === 'in_flight' && claim.record.leaseUntil > this.now()) underWay = true;
        }
        if (underWay) return { kind: 'busy', approval: found };
        await this.save({ ...found, state: 'used' });
        continue;
      }
      if ((state === 'rejected' || state === 'expired') && found.told !== true) {
        const told: Approval = { ...found, state, told: true };
        // While a reviewer's decision is being saved, this one is not saved over it: the caller is told, and
        // the next call (or the sweep) records the expiry of what the reviewer decided.
        if (state === 'expired' && found.state !== 'expired' && (await this.recordExpiry(found, call.callId)) === 'deciding') return { kind: state, approval: told };
        await this.save(told);
        return { kind: state, approval: told };
      }
      // Used up, or refused and already said so: the next link of the chain.
    }
    return this.openWithin(limits, call, generation, digests);
  }

  /**
   * Opens the approval of this call unless its caller already has `maxPending` waiting for a decision.
   * Exact on one replica: a caller's openings here are counted and opened one after another. Across
   * replicas it is not: replicas counting at the same instant each see room for one more, so a caller
   * firing at every replica at once can go over by at most the number of replicas less one, each of those
   * an approval that waits for its deadline like any other. (An exact bound would need a counter kept in
   * step with every decision and expiry; the store's list is what decides, and cannot drift.)
   */
  private async openWithin(limits: OpenLimits, call: CallToApprove, generation: number, digests: CallDigests): Promise<ApprovalVerdict> {
    const max = limits.maxPending;
    const { binding } = digests;
    if (max === undefined) return this.open(call, generation, digests);
    return this.oneAtATime(principalKey(call.principal), async () => {
      const pending = await this.pendingOf(call, binding);
      // The call's own approval, just opened by an identical call (here or on another replica), is not one more.
      if (pending !== 'own' && pending >= max) return { kind: 'limited', limit: max, pending };
      return this.open(call, generation, digests);
    });
  }

  /**
   * How many approvals the caller has waiting for a decision under this policy version, or `own` when one
   * of them binds this very call. Those a policy change left undecidable (another version) do not count:
   * no reviewer can decide them, so counting them would lock the caller out until their deadlines.
   * It reads the caller's approvals that may be pending (the store's index by caller), only when a call
   * needs a new approval, never on a caller's repeats; it once listed every document in the store.
   */
  private async pendingOf(call: CallToApprove, binding: string): Promise<number | 'own'> {
    const caller = principalKey(call.principal);
    const docs = await this.store.pendingOf(caller);
    const now = this.now();
    let count = 0;
    for (const a of await this.inEffectAll(docs)) {
      if (effectiveState(a, now) !== 'pending' || a.policyVersion !== call.policyVersion || principalKey(a.caller) !== caller) continue;
      if (a.binding === binding) return 'own';
      count++;
    }
    return count;
  }

  /** Runs `work` after the caller's previous opening on this replica has ended (however it ended). */
  private async oneAtATime<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.opening.get(key) ?? Promise.resolve();
    const turn = previous.then(work);
    const done = turn.then(
      () => undefined,
      () => undefined,
    );
    this.opening.set(key, done);
    try {
      return await turn;
    } finally {
      if (this.opening.get(key) === done) this.opening.delete(key);
    }
  }

  /**
   * Records the expiry of every approval whose deadline passed while it waited (pending, or approved and
   * unused), whether or not its caller calls again: the `expired` audit record and the decision counted.
   * Run now and then by the gateway; replicas sharing the store record each expiry once. It reads only the
   * approvals whose deadline has passed while they could still be pending or used (the store's index by
   * deadline): each replica once read and parsed every document under `{approvals}` once a minute.
   *
   * `indexOpenedSince`: the approvals opened since then are indexed too, if they are not (see reindex), before
   * that read: during a rolling upgrade a replica still on an older version opens approvals without an index
   * entry after the upgraded ones have run their reindex at start. Only documents put lately are read for it.
   */
  async recordExpiries(options: { indexOpenedSince?: number } = {}): Promise<number> {
    const now = this.now();
    const since = options.indexOpenedSince;
    if (since !== undefined) {
      for (const doc of await this.store.unindexedSince(since)) {
        const a = parse(doc);
        if (isApproval(a) && a.createdAt >= since) await this.store.index(a.id, indexOf(a), this.ttl(a), doc);
      }
    }
    let recorded = 0;
    for (const a of await this.inEffectAll(await this.store.expired(now))) {
      if ((a.state !== 'pending' && a.state !== 'approved') || now < a.expiresAt) continue;
      if ((await this.recordExpiry(a, `expiry:${a.id}`)) === 'recorded') {
        await this.save({ ...a, state: 'expired' });
        recorded++;
      }
    }
    return recorded;
  }

  /**
   * The `expired` record of an approval (as stored), once across replicas and callers (a claim decides who
   * writes it): `elsewhere` when another caller or replica writes it, `deciding` when a reviewer is deciding.
   */
  private async recordExpiry(a: Approval, callId: string): Promise<'recorded' | 'elsewhere' | 'deciding'> {
    // A pending approval's expiry takes the decision's slot, as a reviewer's decision does: a decision made as
    // the deadline passed and the expiry are not both recorded (nor the one saved over the other). A slot held
    // past its lease with the approval still pending belongs to a decider that failed before its decision took effect.
    if (a.state === 'pending') {
      const slot = await this.store.claim(decisionSlot(a.id), a.previewSha256, callId, CLAIM_LEASE_MS, this.ttl(a));
      if (slot.outcome !== 'claimed' && (slot.record.state !== 'in_flight' || slot.record.leaseUntil > this.now())) return 'deciding';
    }
    const claim = await this.store.claim(`approval-expired:${a.id}`, a.binding, callId, CLAIM_LEASE_MS, this.ttl(a));
    if (claim.outcome !== 'claimed') return 'elsewhere';
    await this.store.audit(this.auditEntry({ ...a, state: 'expired' }, 'expired', callId));
    this.events.decided?.('expired');
    return 'recorded';
  }

  /**
   * Remembers that an approved run of this call was interrupted by the upstream asking the client for input
   * (MRTR): the client's one retry of the same call, carrying its answers, goes on without a second approval.
   */
  async continueWith(approval: Approval, ttlMs: number): Promise<void> {
    await this.store.put(continuationId(approval.binding), JSON.stringify({ approvalId: approval.id, token: randomUUID() }), ttlMs);
  }

  /** Whether a retry of this call continues an interrupted approved run; each interruption lets one retry through. */
  async continues(binding: string, callId: string): Promise<string | undefined> {
    const doc = parse(await this.store.get(continuationId(binding))) as { approvalId?: unknown; token?: unknown } | undefined;
    if (typeof doc?.approvalId !== 'string' || typeof doc.token !== 'string') return undefined;
    const claim = await this.store.claim(`continuation-used:${doc.token}`, binding, callId, CLAIM_LEASE_MS, CLAIM_LEASE_MS * 15);
    return claim.outcome === 'claimed' ? doc.approvalId : undefined;
  }

  /**
   * Keeps a claimed run under way while its call runs, however long that is: its lease is renewed a few
   * times a lease. Without it a run longer than the lease was taken for ended by an identical call, which
   * then marked the approval used and opened a new one, though the run could still be given back. Returns
   * the function that stops the renewals, to call once the run has ended.
   */
  holdRun(approval: Approval, run: number, callId: string): () => void {
    const renew = this.store.renew?.bind(this.store);
    if (renew === undefined) return () => {};
    const key = runKey(approval.id, run);
    const timer = setInterval(() => void renew(key, callId, RUN_LEASE_MS).catch(() => {}), RUN_LEASE_MS / 3);
    timer.unref();
    const limit = setTimeout(() => clearInterval(timer), MAX_RUN_HOLD_MS);
    limit.unref();
    return () => {
      clearInterval(timer);
      clearTimeout(limit);
    };
  }

  /**
   * A run that reached the upstream: recorded `executed` (only now, so a run given back leaves no such
   * record), and its claim completed, so it counts as used.
   */
  async ranRun(approval: Approval, run: number, callId: string): Promise<void> {
    await this.store.complete(runKey(approval.id, run), callId, '{}', this.ttl(approval));
    await this.store.audit(this.auditEntry(approval, 'executed', callId, { run }));
  }

  /**
   * Gives back a run that never reached the upstream (a later stage refused the call, or the connection was
   * never made), so the approved call can still run.
   */
  async releaseRun(approval: Approval, run: number, callId: string): Promise<void> {
    await this.store.release(runKey(approval.id, run), callId);
  }

  /** The approval as it is in effect (see inEffect). */
  async get(id: string): Promise<Approval | undefined> {
    const doc = parse(await this.store.get(id));
    return isApproval(doc) ? this.inEffect(doc) : undefined;
  }

  /**
   * How many approvals may be waiting for a decision now, of every caller (the store's index): for the
   * gauge, read at each scrape, which once read every document in the store.
   */
  pendingCount(): Promise<number> {
    return this.store.countPending();
  }

  /** Every approval in the store, read whole: for tests and tools, never per call nor per sweep. */
  async list(): Promise<Approval[]> {
    return this.inEffectAll(await this.store.list());
  }

  /**
   * Up to `limit` approvals in the order they were opened, after the place `after` (a previous page's
   * `at`); `next` is where the next page starts, undefined at the end. A page may hold fewer than `limit`
   * and still have a next (documents past their lifetime are left out). `pendingOnly`: only those that may
   * be pending, by the store's index (each still judged by the reader: a deadline may have passed).
   */
  async page(after: string | undefined, limit: number, pendingOnly = false): Promise<{ items: Array<{ at: string; approval: Approval }>; next: string | undefined }> {
    const page = await this.store.page(after, limit, pendingOnly);
    const items: Array<{ at: string; approval: Approval }> = [];
    for (const { at, doc } of page.items) {
      const a = parse(doc);
      if (isApproval(a)) items.push({ at, approval: await this.inEffect(a) });
    }
    return { items, next: page.next };
  }

  /**
   * Indexes the approvals stored before the store kept an index (by caller, and in the listing), so the
   * limit per caller counts them and reviewers are shown them. Run once per start; what a later write has
   * indexed already is kept. Resolves with how many approvals it saw (one seen twice, as a scan may, twice).
   * It reads the store a slice at a time: read whole, it held every document in memory at once and, on
   * SQLite, kept the writer from answering calls while it read them all.
   */
  reindex(): Promise<number> {
    return eachStored((cursor, count) => this.store.scan(cursor, count), isApproval, (a, doc) => this.store.index(a.id, indexOf(a), this.ttl(a), doc));
  }

  private inEffectAll(docs: string[]): Promise<Approval[]> {
    return Promise.all(docs.map(parse).filter(isApproval).map((a) => this.inEffect(a)));
  }

  /**
   * An approval as it is in effect. A decision saved but not known to be audited is not: the approval is
   * pending. Its decider marks the decision's slot done only once the audit record is written; from then on
   * the decision stands, and is saved so here if its decider could not.
   */
  private async inEffect(a: Approval): Promise<Approval> {
    if (a.unaudited !== true) return a;
    const decided: Approval = { ...a };
    delete decided.unaudited;
    if ((await this.store.read(decisionSlot(a.id)))?.state === 'done') {
      // A save that fails now is tried again by the next reader; the decision stands either way.
      await this.save(decided).catch(() => {});
      return decided;
    }
    const pending: Approval = { ...decided, state: 'pending' };
    delete pending.decision;
    return pending;
  }

  /**
   * Records a reviewer's (or the user's) decision on a pending approval. The first decision wins: a claim in
   * the store lets exactly one through, whichever replica it reaches.
   *
   * `mayDecide` says whether who asked may make this decision: true, or why not (false is `forbidden`). A
   * decision refused for who asked is itself an audit record (outcome `refused`, the refusal, the reviewer
   * and their reason), so an attempt to approve one's own call, or a rule one does not review, is on the
   * record; it is written before the refusal is answered (fail closed: a store that cannot take it answers
   * an error, and nothing is decided either way).
   *
   * Who asked is judged before the approval's state, whatever that is: a refused reviewer is refused alike
   * on a pending, decided, used, expired or invalidated approval, so the answer tells them nothing of it.
   * (Judged after, they were told 409 `expired`, `invalidated` or `not_pending`, and so learnt the state of
   * an approval they may not decide, which for a rule they do not review they are not even shown.)
   */
  async decide(id: string, decision: { approve: boolean; by: string; reason?: string; previewSha256?: string; policyVersion: string; requestId: string; mayDecide(a: Approval): boolean | DecisionRefusal }): Promise<{ ok: true; approval: Approval } | { ok: false; problem: DecisionProblem; approval?: Approval }> {
    const found = await this.get(id);
    if (found === undefined) return { ok: false, problem: 'not_found' };
    const may = decision.mayDecide(found);
    if (may !== true) {
      const refusal: DecisionRefusal = may === false ? 'forbidden' : may;
      await this.store.audit(this.auditEntry(found, 'refused', decision.requestId, { reviewer: decision.by, refusal, ...(decision.reason !== undefined ? { reason: decision.reason } : {}) }));
      return { ok: false, problem: refusal, approval: found };
    }
    const now = this.now();
    const state = effectiveState(found, now);
    if (state === 'expired') return { ok: false, problem: 'expired', approval: found };
    if (state !== 'pending') return { ok: false, problem: 'not_pending', approval: found };
    if (found.policyVersion !== decision.policyVersion) return { ok: false, problem: 'invalidated', approval: found };
    if (decision.previewSha256 !== undefined && decision.previewSha256 !== found.previewSha256) return { ok: false, problem: 'preview_mismatch', approval: found };
    if (!(await this.claimDecision(found, decision.requestId))) return { ok: false, problem: 'not_pending', approval: (await this.get(id)) ?? found };
    const decided: Approval = {
      ...found,
      state: decision.approve ? 'approved' : 'rejected',
      decision: { by: decision.by, at: now, ...(decision.reason !== undefined ? { reason: decision.reason } : {}), previewSha256: found.previewSha256 },
    };
    // Every decision is audited before it takes effect (fail closed), and the audit never records one that
    // cannot take effect: saved first marked unaudited (not in effect: a save that fails leaves nothing to
    // take back), then recorded, then saved in effect. (Recorded first, a save that failed left an `approved`
    // record on an approval still pending, which the next reviewer could reject; saved in effect first, a
    // record that failed, and then the save putting it back, left a decision in effect that no record shows.)
    const slot = decisionSlot(id);
    try {
      await this.save({ ...decided, unaudited: true });
    } catch (err) {
      // Not decided after all: let the next attempt decide instead of finding it "already decided".
      await this.store.release(slot, decision.requestId).catch(() => {});
      throw err;
    }
    try {
      await this.store.audit(this.auditEntry(decided, decision.approve ? 'approved' : 'rejected', decision.requestId, { reviewer: decision.by, ...(decision.reason !== undefined ? { reason: decision.reason } : {}) }));
    } catch (err) {
      // No record, no decision: pending again, and the next attempt can decide. If the store cannot take even
      // that, the decision saved stays unaudited, so not in effect, and its slot frees after its lease.
      await this.save(found).then(() => this.store.release(slot, decision.requestId)).catch(() => {});
      throw err;
    }
    // Recorded: the decision stands. Saved in effect, then its slot marked done, which lets readers apply it
    // should that save have failed (marked after the save, and not before, so that an expiry recorded once
    // the decision is in effect is never saved over by it). Were both to fail, it is not in effect and the
    // slot frees after its lease: a later decision would then be a second record, the one case left.
    let saved = true;
    let failure: unknown;
    await this.save(decided).catch((err: unknown) => {
      saved = false;
      failure = err;
    });
    const marked = await this.store.complete(slot, decision.requestId, 'audited', this.ttl(found)).catch(() => false);
    if (!saved && !marked) throw failure;
    this.events.decided?.(decision.approve ? 'approved' : 'rejected');
    return { ok: true, approval: decided };
  }

  /**
   * Takes the slot that lets one decision through. A slot held past its lease with the approval still
   * pending belongs to a decider that failed and could not give it back (the store failing that too): it is
   * free again, or the approval could not be decided until its deadline. Of concurrent takers one wins: each
   * frees only the failed decider's hold, then claims as any decider does.
   */
  private async claimDecision(a: Approval, owner: string): Promise<boolean> {
    const key = decisionSlot(a.id);
    for (let attempt = 0; attempt < 2; attempt++) {
      const claim = await this.store.claim(key, a.previewSha256, owner, CLAIM_LEASE_MS, this.ttl(a));
      if (claim.outcome === 'claimed') return true;
      const held = claim.record;
      if (held.state !== 'in_flight' || held.leaseUntil > this.now() || attempt > 0) return false;
      await this.store.release(key, held.owner);
    }
    return false;
  }

  private async open(call: CallToApprove, generation: number, digests: CallDigests, skipped = 0): Promise<ApprovalVerdict> {
    const { binding, argumentsSha256, argumentsDigest } = digests;
    const now = this.now();
    const preview = redactValue(call.args);
    const p = call.principal;
    const approval: Approval = {
      id: approvalId(binding, generation),
      binding,
      generation,
      rule: call.rule.id,
      by: call.rule.by,
      reviewers: { subjects: [...call.rule.reviewers.subjects], groups: [...call.rule.reviewers.groups] },
      reuse: call.rule.reuse,
      caller: { subject: p.subject, via: p.via, ...(p.tenant !== undefined ? { tenant: p.tenant } : {}), ...(p.keyId !== undefined ? { keyId: p.keyId } : {}) },
      upstream: call.route.upstream,
      toolRef: call.route.ref,
      tool: call.route.publicName,
      argumentsSha256,
      argumentsDigest,
      preview,
      previewSha256: sha256(canonicalJson(preview)),
      policyVersion: call.policyVersion,
      createdAt: now,
      expiresAt: now + call.rule.deadlineMs,
      state: 'pending',
    };
    const claim = await this.store.claim(`approval-open:${approval.id}`, argumentsSha256, call.callId, CLAIM_LEASE_MS, this.ttl(approval));
    if (claim.outcome !== 'claimed') {
      // Another call (here or on another replica) is opening this very approval: it is the same one.
      const opening = await this.get(approval.id);
      if (opening !== undefined) return { kind: 'pending', approval: opening, opened: false };
      // Claimed and, past the claim's lease, still not saved: its opener failed between the two and never
      // will. The claim outlives the deadline by days, so the next generation stands in for this one.
      const held = claim.record;
      if (held.state === 'in_flight' && held.leaseUntil <= now && skipped < MAX_LINKS) return this.open(call, generation + 1, digests, skipped + 1);
      return { kind: 'pending', approval, opened: false };
    }
    await this.store.audit(this.auditEntry(approval, 'proposed', call.callId));
    await this.save(approval);
    await this.store.put(pointerId(binding), JSON.stringify({ generation }), this.ttl(approval));
    return { kind: 'pending', approval, opened: true };
  }

  private save(a: Approval): Promise<void> {
    return this.store.put(a.id, JSON.stringify(a), this.ttl(a), indexOf(a));
  }

  private ttl(a: Approval): number {
    return Math.max(1_000, a.expiresAt - this.now() + RETAIN_MS);
  }

  private auditEntry(a: Approval, outcome: 'proposed' | 'approved' | 'rejected' | 'refused' | 'expired' | 'executed', callId: string, extra: { run?: number; reviewer?: string; reason?: string; refusal?: DecisionRefusal } = {}): AuditEntry {
    return {
      time: new Date(this.now()).toISOString(),
      callId,
      runId: randomUUID(),
      subject: a.caller.subject,
      ...(a.caller.tenant !== undefined ? { tenant: a.caller.tenant } : {}),
      ...(a.caller.keyId !== undefined ? { keyId: a.caller.keyId } : {}),
      toolRef: a.toolRef,
      tool: a.tool,
      upstream: a.upstream,
      method: 'approval',
      argumentsSha256: a.argumentsSha256,
      arguments: a.preview,
      outcome,
      latencyMs: 0,
      approvalId: a.id,
      rule: a.rule,
      ...(extra.refusal !== undefined ? { refusal: extra.refusal } : {}),
      ...(extra.reviewer !== undefined ? { reviewer: extra.reviewer } : {}),
      ...(extra.reason !== undefined ? { reason: extra.reason } : {}),
      ...(extra.run !== undefined ? { run: extra.run } : {}),
    };
  }
}

/**
 * An approval's index entry: its caller, when it was opened, until when it may be pending, and until when
 * the expiry sweep must look at it (pending, or approved and not used up). A decision saved but not yet
 * audited is not in effect (the approval reads as pending), so it keeps its place among the caller's
 * pending ones, and in the sweep's, until saved in effect.
 */
function indexOf(a: Approval): ApprovalIndexEntry {
  const pending = a.state === 'pending' || a.unaudited === true;
  return { caller: principalKey(a.caller), createdAt: a.createdAt, pendingUntil: pending ? a.expiresAt : 0, liveUntil: pending || a.state === 'approved' ? a.expiresAt : 0 };
}

function approvalId(binding: string, generation: number): string {
  return `ap_${sha256(`${binding}:${generation}`).slice(0, 24)}`;
}

/** The claim of one of an approved call's `reuse` runs. */
function runKey(id: string, run: number): string {
  return `approval-run:${id}:${run}`;
}

/** The claim that lets one decision (or a pending approval's expiry) through; done once the decision is audited. */
function decisionSlot(id: string): string {
  return `approval-decision:${id}`;
}

function continuationId(binding: string): string {
  return `continuation:${binding}`;
}

function pointerId(binding: string): string {
  return `binding:${binding}`;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export type { ApprovalState };
