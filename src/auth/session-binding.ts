// Legacy session ids are bearer-like handles: whoever presents one is served that session. Each id is
// bound to the Principal it was issued to, at the moment the answer that issues it passes through
// Gatehouse (2025-11-25 security best practices §Session Hijacking: bind sessions to the user). An id
// Gatehouse never saw issued is refused and never remembered, so nobody can claim an id in advance or
// flood the table to push a binding out; another caller presenting a bound id gets the same 404 as for
// an id that does not exist.

import { principalKey, type Principal } from '../pipeline/principal.js';

/** Why a binding ended; a late request from the owner learns it (404 `data.details.reason`). */
export type BindingEnd = 'idle_timeout' | 'session_cap' | 'client_closed' | 'unknown';

/**
 * Admitted: the session's owner, with what its client declared at initialize (in 2026-07-28 terms) and the
 * protocol version that initialize negotiated, once its answer showed it.
 */
export type SessionAdmission = { ok: true; capabilities: Record<string, unknown>; version?: string } | { ok: false; reason: BindingEnd };

interface Binding {
  owner: string;
  /** The owner's parts, compared on every request without building its key (principalKey). */
  via: string;
  tenant: string;
  subject: string;
  capabilities: Record<string, unknown>;
  /** The answer to every admitted request of the owner: made once, not per request. */
  admitted: SessionAdmission & { ok: true };
  lastUsed: number;
  /** Requests open on the session now (a call, its client's answer to it, a DELETE): the cap never ends it then. */
  calls: number;
  /** Streams open on it (a GET stream, an HTTP+SSE connection): it never idles out, but the cap may end it. */
  streams: number;
  /** The initialize that issued it is still being answered: its version may yet come (negotiated). */
  answering: boolean;
  /** Requests that came while `answering` with no version to go by wait on this (versionSettled); made by the first. */
  settled: Promise<void> | undefined;
  wake: (() => void) | undefined;
}

/** What a request holds open on a session (enter): a call, or a stream that only listens. */
export type SessionUseKind = 'call' | 'stream';

const UNKNOWN: SessionAdmission = Object.freeze({ ok: false, reason: 'unknown' });

/** Ended ids remembered with their owner, oldest forgotten first, so the owner hears why. */
const TOMBSTONES = 10_000;

export class SessionBinding {
  private readonly live = new Map<string, Binding>();
  private readonly perOwner = new Map<string, number>();
  private readonly ended = new Map<string, { owner: string; reason: BindingEnd }>();
  private readonly sweeper: NodeJS.Timeout;
  /** Live bindings at most: a new one ends the least recently used one no call runs on (reserve), or is refused. */
  private readonly max: number;
  /** Live bindings one caller may hold: a new one ends that caller's own least recently used one no call runs on, or is refused. */
  private readonly maxPerOwner: number;
  /** Places held by initializes under way (reserve), per owner and in all: they count against the caps. */
  private readonly opening = new Map<string, number>();
  private openingTotal = 0;

  constructor(private readonly limits: { max: number; idleTimeoutMs: number }, private readonly onEnd: (id: string, reason: BindingEnd) => void = () => {}) {
    this.max = Math.max(limits.max * 4, 1024);
    this.maxPerOwner = limits.max;
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, Math.max(1_000, limits.idleTimeoutMs / 4))).unref();
  }

  /**
   * Whether the last initialize answered here issued a session id: the endpoint then requires one
   * (2025-11-25/basic/transports.mdx §Session Management 2), and a legacy request without one is refused
   * 400 at the edge. Learnt from the answers, not configured: Gatehouse's own sessions (the catalog, the era
   * bridges, stdio) always issue one, a pass-through's upstream may issue none (a stateless server), and one
   * redeployed stateless is known as such from its next initialize's answer on.
   */
  requiresSession = false;

  /** An initialize was answered (2xx) with a session id, or without one (issued), on this endpoint. */
  initializeAnswered(issuedId: boolean): void {
    this.requiresSession = issuedId;
  }

  /** Live sessions: issued, not ended, used within the idle timeout. */
  get size(): number {
    return this.live.size;
  }

  /**
   * The protocol version the session's initialize negotiated, read from its answer on the way out (after
   * `bind`, which the answer's headers allow before its body has come): from then on the session's
   * requests are judged under it (server.ts). A no-op for an id no longer bound.
   */
  negotiated(id: string, version: string): void {
    const binding = this.live.get(id);
    if (!binding) return;
    binding.admitted.version = version;
    settle(binding);
  }

  /**
   * The answer to the initialize that issued `id` is over (written, failed or dropped): no version will
   * come from it any more, so nothing waits for one (versionSettled).
   */
  answered(id: string): void {
    const binding = this.live.get(id);
    if (binding) settle(binding);
  }

  /**
   * A promise to wait on before judging a request of the session that names no version: its client had
   * the id from the initialize answer's headers, and sent it before that answer's body said which version
   * was negotiated (it is read on the way out, negotiated). It settles once the version is known, the
   * answer is over without one (answered), or the session ends; undefined when there is nothing to wait
   * for. Until 5 December such a request was judged under 2025-03-26 (a batch let into a 2025-11-25 session).
   */
  versionSettled(id: string): Promise<void> | undefined {
    const binding = this.live.get(id);
    if (binding === undefined || !binding.answering) return undefined;
    binding.settled ??= new Promise<void>((resolve) => void (binding.wake = resolve));
    return binding.settled;
  }

  /**
   * Binds a session id to the caller it was just issued to. An upstream that issues an id again has
   * started a new session under it: the new caller owns it from now on.
   */
  bind(id: string, principal: Principal, capabilities: Record<string, unknown> = {}): void {
    const owner = principalKey(principal);
    const previous = this.live.get(id);
    if (previous) this.release(id, previous);
    this.ended.delete(id);
    // `version` comes with the initialize's answer (negotiated); named now, so the object keeps one shape.
    this.live.set(id, { owner, via: principal.via, tenant: principal.tenant ?? '', subject: principal.subject, capabilities, admitted: { ok: true, capabilities, version: undefined }, lastUsed: Date.now(), calls: 0, streams: 0, answering: true, settled: undefined, wake: undefined });
    this.perOwner.set(owner, (this.perOwner.get(owner) ?? 0) + 1);
    // The initialize that issued it reserved its place (reserve) and made room then; these only act for an
    // id bound without one. The session exists upstream by now and its answer is on its way: when nothing
    // may end, it is bound past the cap rather than handed out unbound (its client could never use it).
    while ((this.perOwner.get(owner) ?? 0) > this.maxPerOwner && this.endLeastUsed(id, owner));
    while (this.live.size > this.max && this.endLeastUsed(id, undefined));
  }

  /**
   * Holds a place for a session an `initialize` is about to create, making room as the session tables' cap
   * does (session-table.ts makeRoom): the caller's own least recently used idle binding ends, else its
   * least recently used one with only a stream open; never one with a call in flight, whose client would
   * get 404 for the rest of its work (its answer to an elicitation, its next call) while the call ran on.
   * The same for the bound on all callers. Undefined when there is no room: the initialize is refused (503
   * session_cap, sessionCapRefusal) before the upstream creates a session nobody could be given. The place
   * is given back by the function returned, once the answer is bound (or was not issued).
   */
  reserve(principal: Principal): (() => void) | undefined {
    const owner = principalKey(principal);
    while ((this.perOwner.get(owner) ?? 0) + (this.opening.get(owner) ?? 0) >= this.maxPerOwner) {
      if (!this.endLeastUsed(undefined, owner)) return undefined;
    }
    while (this.live.size + this.openingTotal >= this.max) {
      if (!this.endLeastUsed(undefined, undefined)) return undefined;
    }
    this.opening.set(owner, (this.opening.get(owner) ?? 0) + 1);
    this.openingTotal++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.openingTotal--;
      const left = (this.opening.get(owner) ?? 1) - 1;
      if (left <= 0) this.opening.delete(owner);
      else this.opening.set(owner, left);
    };
  }

  /**
   * Whether the caller may use the session now. Ids never issued, and ids bound to someone else, are
   * refused with reason `unknown`; the owner of an ended session hears why it ended.
   */
  admit(id: string, principal: Principal): SessionAdmission {
    const binding = this.live.get(id);
    if (binding) {
      // The same comparison as principalKey's, part by part (it runs on every legacy request).
      if (binding.subject !== principal.subject || binding.via !== principal.via || binding.tenant !== (principal.tenant ?? '')) return UNKNOWN;
      binding.lastUsed = Date.now();
      return binding.admitted;
    }
    const tomb = this.ended.get(id);
    return tomb !== undefined && tomb.owner === principalKey(principal) ? { ok: false, reason: tomb.reason } : UNKNOWN;
  }

  /** Marks a call or a stream open on the session; the returned function marks it done. */
  enter(id: string, kind: SessionUseKind): () => void {
    const binding = this.live.get(id);
    if (!binding) return noop;
    if (kind === 'call') binding.calls++;
    else binding.streams++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (kind === 'call') binding.calls--;
      else binding.streams--;
      binding.lastUsed = Date.now();
    };
  }

  /** Ends a binding (DELETE answered, the upstream no longer knows the id); a no-op for unbound ids. */
  end(id: string, reason: BindingEnd): void {
    const binding = this.live.get(id);
    if (!binding) return;
    this.release(id, binding);
    this.ended.set(id, { owner: binding.owner, reason });
    if (this.ended.size > TOMBSTONES) this.ended.delete(this.ended.keys().next().value!);
    this.onEnd(id, reason);
  }

  /** Ends the bindings idle past the timeout, with nothing in flight. */
  sweep(now = Date.now()): void {
    const cutoff = now - this.limits.idleTimeoutMs;
    for (const [id, b] of this.live) if (b.calls === 0 && b.streams === 0 && b.lastUsed < cutoff) this.end(id, 'idle_timeout');
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  private release(id: string, binding: Binding): void {
    this.live.delete(id);
    settle(binding);
    const left = (this.perOwner.get(binding.owner) ?? 1) - 1;
    if (left <= 0) this.perOwner.delete(binding.owner);
    else this.perOwner.set(binding.owner, left);
  }

  /**
   * Ends the least recently used binding of one owner (or of anyone) other than `keep` to make room: an idle
   * one, else one with only streams open (its client learns from the 404 to start anew), never one with a
   * call in flight. Until 4 December it ended the least recently used whatever ran on it, and a caller's
   * long call lost its session to the caller's own next initialize. False when none may end.
   */
  private endLeastUsed(keep: string | undefined, owner: string | undefined): boolean {
    const victim = this.leastUsed(keep, owner, (b) => b.calls === 0 && b.streams === 0) ?? this.leastUsed(keep, owner, (b) => b.calls === 0);
    if (victim === undefined) return false;
    this.end(victim, 'session_cap');
    return true;
  }

  private leastUsed(keep: string | undefined, owner: string | undefined, which: (b: Binding) => boolean): string | undefined {
    let oldestId: string | undefined;
    let oldest = Infinity;
    for (const [id, b] of this.live) {
      if (id !== keep && (owner === undefined || b.owner === owner) && b.lastUsed < oldest && which(b)) {
        oldest = b.lastUsed;
        oldestId = id;
      }
    }
    return oldestId;
  }
}

function noop(): void {}

/** Nothing more is to be learnt of the binding's version: whoever waited for it goes on. */
function settle(binding: Binding): void {
  binding.answering = false;
  const wake = binding.wake;
  if (wake === undefined) return;
  binding.wake = undefined;
  binding.settled = undefined;
  wake();
}
