// The legacy sessions Gatehouse itself holds: minting secure ids, idle expiry, a cap with least-recently-
// used eviction, and a memory of recently ended ids so a late request learns why its session is gone
// (404 with data.details.reason, DESIGN.md §2).

import { randomUUID } from 'node:crypto';
import type { TransportRefusal } from '../errors.js';
import type { CallContext } from '../pipeline/context.js';
import { refused, type Outcome } from '../pipeline/outcome.js';
import { ErrorCode } from '../protocol/jsonrpc.js';

export type EndReason = 'idle_timeout' | 'session_cap' | 'client_closed' | 'unknown';

export interface HeldSession {
  lastUsed: number;
  /** True when nothing is in flight and no stream is open, so idling may end it. */
  isIdle(): boolean;
  /** True while a call runs on it (or waits for its client's answer): ending the session would fail it. */
  hasCallInFlight(): boolean;
  close(reason: EndReason): Promise<void>;
}

export type Lookup<S> = { found: true; session: S } | { found: false; reason: EndReason };

/** Ended ids remembered, oldest forgotten first; enough to explain a burst of late requests. */
const TOMBSTONES = 10_000;

export class SessionTable<S extends HeldSession> {
  private readonly live = new Map<string, S>();
  private readonly ended = new Map<string, EndReason>();
  private readonly sweeper: NodeJS.Timeout;
  /**
   * Places held by sessions being opened (a stdio child started, its `initialize` not answered yet): not
   * live, but each already costs what a session costs, so they count against the cap (see reserve).
   */
  private opening = 0;

  constructor(private readonly limits: { max: number; idleTimeoutMs: number }, private readonly onEnd: (id: string, reason: EndReason) => void = () => {}) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, Math.max(1_000, limits.idleTimeoutMs / 4))).unref();
  }

  /** The live sessions, as they are now (a copy: sessions may end while the caller goes through them). */
  snapshot(): S[] {
    return [...this.live.values()];
  }

  get size(): number {
    return this.live.size;
  }

  /** A fresh, unguessable id (visible ASCII, 2025-11-25/basic/transports.mdx §Session Management 1). */
  newId(): string {
    return randomUUID();
  }

  /**
   * Makes room for one more session when at the cap, by ending the least recently used idle session, else
   * the least recently used one with only a listening stream open (its client learns from the 404 to start
   * anew); never one with a call in flight. Until 4 December it ended the least recently used whatever ran
   * on it, and another caller's call failed because someone initialized. False when there is no room.
   */
  makeRoom(): boolean {
    while (this.live.size + this.opening >= this.limits.max) {
      const victim = this.leastUsed((s) => s.isIdle()) ?? this.leastUsed((s) => !s.hasCallInFlight());
      if (victim === undefined) return false;
      this.end(victim, 'session_cap');
    }
    return true;
  }

  private leastUsed(which: (s: S) => boolean): string | undefined {
    let oldestId: string | undefined;
    let oldest = Infinity;
    for (const [id, s] of this.live) {
      if (s.lastUsed < oldest && which(s)) {
        oldest = s.lastUsed;
        oldestId = id;
      }
    }
    return oldestId;
  }

  /**
   * Holds a place for a session that takes a while to open, ending the least recently used live ones to
   * make room (makeRoom); undefined when there is none: sessions still opening fill the cap, or the rest
   * each have a call in flight. Without it, every one of a burst
   * of `initialize`s found the table below the cap while the others waited on their children, and each
   * started one. The place is given back by the function returned, after `add` or instead of it.
   */
  reserve(): (() => void) | undefined {
    if (!this.makeRoom()) return undefined;
    this.opening++;
    let held = true;
    return () => {
      if (held) this.opening--;
      held = false;
    };
  }

  add(id: string, session: S): void {
    this.live.set(id, session);
  }

  lookup(id: string): Lookup<S> {
    const session = this.live.get(id);
    if (session) {
      session.lastUsed = Date.now();
      return { found: true, session };
    }
    return { found: false, reason: this.ended.get(id) ?? 'unknown' };
  }

  /** Ends a session and remembers why; a no-op for ids no longer live. */
  end(id: string, reason: EndReason): void {
    const session = this.live.get(id);
    if (!session) return;
    this.live.delete(id);
    this.remember(id, reason);
    this.onEnd(id, reason);
    void session.close(reason);
  }

  /** Forgets a session that ended on its own (its process exited), keeping the reason for late callers. */
  forget(id: string, reason: EndReason): void {
    if (this.live.delete(id)) this.remember(id, reason);
  }

  async closeAll(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.live.entries()];
    this.live.clear();
    await Promise.all(all.map(([, s]) => s.close('client_closed')));
  }

  sweep(now = Date.now()): void {
    const cutoff = now - this.limits.idleTimeoutMs;
    for (const [id, s] of this.live) if (s.lastUsed < cutoff && s.isIdle()) this.end(id, 'idle_timeout');
  }

  private remember(id: string, reason: EndReason): void {
    this.ended.set(id, reason);
    if (this.ended.size > TOMBSTONES) this.ended.delete(this.ended.keys().next().value!);
  }
}

/** What a legacy call's session header comes to: the session, or the answer that ends the call here. */
export type SessionLookup<S> = { session: S } | { outcome: Outcome };

/**
 * The session a legacy call names: 400 without Mcp-Session-Id, 404 with the end reason for an unknown or
 * ended one, 200 for a DELETE that ends it (2025-11-25/basic/transports.mdx §Session Management 2, 3, 5).
 */
export function resolveSession<S extends HeldSession>(table: SessionTable<S>, ctx: CallContext): SessionLookup<S> {
  const sessionId = ctx.headers['mcp-session-id'];
  if (typeof sessionId !== 'string') {
    return { outcome: refused({ kind: 'transport', code: 'session_required', status: 400, rpcCode: ErrorCode.InvalidRequest, message: 'Mcp-Session-Id header is required; send initialize first' }) };
  }
  const found = table.lookup(sessionId);
  if (!found.found) return { outcome: refused(sessionNotFound(found.reason)) };
  if (ctx.httpMethod === 'DELETE') {
    table.end(sessionId, 'client_closed');
    return { outcome: { kind: 'empty', status: 200 } };
  }
  return { session: found.session };
}

/** The refusal when makeRoom finds no room; shared with the edge's session bindings. */
export { sessionCapRefusal } from '../errors.js';

/** 404 / -32001 with the reason in data.details.reason (DESIGN.md §2). */
export function sessionNotFound(reason: EndReason): TransportRefusal {
  return { kind: 'transport', code: 'session_unknown', status: 404, rpcCode: ErrorCode.SessionNotFound, message: 'Session not found; initialize a new session', data: { details: { reason } } };
}
