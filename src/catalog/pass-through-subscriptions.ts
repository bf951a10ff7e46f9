// The resource subscriptions legacy clients made through one upstream's pass-through (a 2025-11-25 client of
// a legacy or dual-era HTTP upstream, or of such a stdio server's `perSession` child), noted as they go up so that a
// reload that goes on passing the upstream through can judge them again. They are held by the upstream's own
// session (the child, for stdio), not by Gatehouse: the client's GET stream
// relays their updates, and ending it would not help, since the client opens it again on the same session
// (the v1 SDK client reconnects a GET stream that ends). Until 5 December a URI the new egress rules block
// stayed subscribed, the upstream watching it and its updates reaching the client. Now the upstream's session
// is asked to drop it (Upstream.unsubscribeSession), as the catalog's legacy sessions drop theirs upstream
// (LegacyFront.rejudgeSubscriptions); a client that subscribes again is judged by the egress stage.
// Only the subscribe, unsubscribe and DELETE of such a session are read here: other calls cost a method test.

import type { CallContext } from '../pipeline/context.js';
import type { SubscriptionJudge, Upstream } from '../pipeline/ports.js';
import type { Principal } from '../pipeline/principal.js';
import { MAX_RESOURCE_SUBSCRIPTIONS } from '../protocol/methods.js';
import { allowed } from './open-listens.js';

/**
 * The most sessions noted per upstream. A session the upstream forgets without its client's DELETE is not
 * seen to end here: past this many, the one noted first is forgotten, so the table cannot grow without bound.
 */
const MAX_SESSIONS = 10_000;

/** Whether `ctx` changes the subscriptions a legacy session holds upstream (the only calls noted). */
export function changesSubscriptions(ctx: CallContext): boolean {
  const method = ctx.method;
  return method === 'resources/subscribe' || method === 'resources/unsubscribe' || ctx.httpMethod === 'DELETE';
}

interface SessionSubscriptions {
  principal: Principal;
  capabilities: Record<string, unknown>;
  version: string;
  uris: Set<string>;
}

export class PassThroughSubscriptions {
  /** By member, then by the upstream's session id. */
  private readonly bySession = new Map<Upstream, Map<string, SessionSubscriptions>>();

  /**
   * Notes what a call that `changesSubscriptions` does to its session, as it goes up (the egress stage has
   * let it through): a subscribe that the upstream then refuses is dropped again on a reload that forbids
   * it, which costs the upstream one refused unsubscribe.
   */
  note(member: Upstream, ctx: CallContext): void {
    const sessionId = ctx.sessionId;
    if (sessionId === undefined || member.unsubscribeSession === undefined) return;
    let sessions = this.bySession.get(member);
    if (ctx.httpMethod === 'DELETE') {
      sessions?.delete(sessionId);
      return;
    }
    const uri = (ctx.message as { params?: { uri?: unknown } } | undefined)?.params?.uri;
    if (typeof uri !== 'string') return;
    if (ctx.method === 'resources/unsubscribe') {
      sessions?.get(sessionId)?.uris.delete(uri);
      return;
    }
    if (sessions === undefined) this.bySession.set(member, (sessions = new Map()));
    let session = sessions.get(sessionId);
    if (session === undefined) {
      if (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value!);
      sessions.set(sessionId, (session = { principal: ctx.principal, capabilities: ctx.clientCapabilities, version: ctx.version, uris: new Set() }));
    }
    if (session.uris.size < MAX_RESOURCE_SUBSCRIPTIONS) session.uris.add(uri);
  }

  /**
   * Lets go of the sessions of every member but `member` (undefined: all), whose pass-through is retired: the
   * catalog does not know them (their next request is answered 404), and nothing relays their updates any
   * more, so each upstream session is asked to drop every subscription noted (best effort, in the background,
   * one at a time) rather than go on watching its URIs, some perhaps ones the new rules hide or block, until it
   * idles out.
   */
  keepOnly(member: Upstream | undefined): void {
    for (const [owner, sessions] of [...this.bySession]) {
      if (owner === member) continue;
      this.bySession.delete(owner);
      void dropAll(owner, sessions);
    }
  }

  /**
   * Asks `member` to drop, in each session, every subscription `mayKeep` no longer allows (one that cannot
   * be judged is not kept), one URI at a time. Returns how many were dropped.
   */
  async rejudge(member: Upstream, mayKeep: SubscriptionJudge): Promise<number> {
    const sessions = this.bySession.get(member);
    if (sessions === undefined || member.unsubscribeSession === undefined) return 0;
    let dropped = 0;
    for (const [sessionId, session] of [...sessions]) {
      for (const uri of [...session.uris]) {
        if (await allowed(mayKeep, session, uri)) continue;
        session.uris.delete(uri);
        if (await member.unsubscribeSession(sessionId, session.version, uri)) dropped++;
      }
      if (session.uris.size === 0 && sessions.get(sessionId) === session) sessions.delete(sessionId);
    }
    return dropped;
  }
}

/** Asks `owner` to drop each subscription of `sessions`, one after another (unsubscribeSession never rejects). */
async function dropAll(owner: Upstream, sessions: Map<string, SessionSubscriptions>): Promise<void> {
  for (const [sessionId, session] of sessions) for (const uri of session.uris) await owner.unsubscribeSession?.(sessionId, session.version, uri);
}
