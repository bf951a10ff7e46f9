// The legacy sessions Gatehouse itself holds: minting secure ids, idle expiry, a cap with least-recently-
// used eviction, and a memory of recently ended ids so a late request learns why its session is gone
// (404 with data.details.reason, DESIGN.md §2).

import { randomUUID } from 'node:crypto';
import { sendJsonRpcError } from '../edge/respond.js';
import { ErrorCode, idOf } from '../protocol/jsonrpc.js';
import type { McpExchange } from './upstream.js';

export type EndReason = 'idle_timeout' | 'session_cap' | 'client_closed' | 'unknown';

export interface HeldSession {
  lastUsed: number;
  /** True when nothing is in flight and no stream is open, so idling may end it. */
  isIdle(): boolean;
  close(reason: EndReason): Promise<void>;
}

export type Lookup<S> = { found: true; session: S } | { found: false; reason: EndReason };

/** Ended ids remembered, oldest forgotten first; enough to explain a burst of late requests. */
const TOMBSTONES = 10_000;

export class SessionTable<S extends HeldSession> {
  private readonly live = new Map<string, S>();
  private readonly ended = new Map<string, EndReason>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly limits: { max: number; idleTimeoutMs: number }, private readonly onEnd: (id: string, reason: EndReason) => void = () => {}) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, Math.max(1_000, limits.idleTimeoutMs / 4))).unref();
  }

  get size(): number {
    return this.live.size;
  }

  /** A fresh, unguessable id (visible ASCII, 2025-11-25/basic/transports.mdx §Session Management 1). */
  newId(): string {
    return randomUUID();
  }

  /** Makes room for one more session, ending the least recently used one when at the cap. */
  makeRoom(): void {
    while (this.live.size >= this.limits.max) {
      let oldestId: string | undefined;
      let oldest = Infinity;
      for (const [id, s] of this.live) {
        if (s.lastUsed < oldest) {
          oldest = s.lastUsed;
          oldestId = id;
        }
      }
      if (oldestId === undefined) return;
      this.end(oldestId, 'session_cap');
    }
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

/**
 * The session a legacy exchange names, or undefined once the exchange has been answered here: 400 without
 * Mcp-Session-Id, 404 with the end reason for an unknown or ended one, 200 for a DELETE that ends it
 * (2025-11-25/basic/transports.mdx §Session Management 2, 3, 5).
 */
export function resolveSession<S extends HeldSession>(table: SessionTable<S>, ex: McpExchange): S | undefined {
  const reply = { 'x-gatehouse-call-id': ex.callId };
  const sessionId = ex.req.headers['mcp-session-id'];
  if (typeof sessionId !== 'string') {
    sendJsonRpcError(ex.res, 400, idOf(ex.message), ErrorCode.InvalidRequest, 'Mcp-Session-Id header is required; send initialize first', undefined, reply);
    return undefined;
  }
  const found = table.lookup(sessionId);
  if (!found.found) {
    sendJsonRpcError(ex.res, 404, idOf(ex.message), ErrorCode.SessionNotFound, 'Session not found; initialize a new session', { details: { reason: found.reason } }, reply);
    return undefined;
  }
  if (ex.httpMethod === 'DELETE') {
    table.end(sessionId, 'client_closed');
    ex.res.writeHead(200, reply).end();
    return undefined;
  }
  return found.session;
}
