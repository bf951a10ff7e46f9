// The resource subscriptions legacy clients made through one upstream's pass-through (a 2025-11-25 client of
// a legacy or dual-era HTTP upstream, or of such a stdio server's `perSession` child), noted as they go up so that a
// reload that goes on passing the upstream through can judge them again. They are held by the upstream's own
// session (the child, for stdio), not by Gatehouse: the client's GET stream
// relays their updates, and ending it would not help, since the client opens it again on the same session
// (the v1 SDK client reconnects a GET stream that ends). Until 5 December a URI the new egress rules block
// stayed subscribed, the upstream watching it and its updates reaching the client. Now the upstream's session
// is asked to drop it (Upstream.unsubscribeSession), as the catalog's legacy sessions drop theirs upstream
// (LegacyFront.rejudgeSubscriptions); a client that subscribes again is judged by the egress stage.
// A drop the upstream fails (an error, a timeout) leaves the URI noted, so the next reload asks again, up to
// MAX_DROP_TRIES reloads; until 5 December the URI was forgotten as it was asked, and stayed subscribed.
// A subscribe on its way while a reload retires the pass-through (still in the old configuration's pipeline,
// or upstream, when keepOnly asked for the drops) is dropped once its answer comes (answered): until
// 5 December it was noted after the drops, or subscribed upstream after them, and stayed until a later reload.
// So is one that the old egress rules let through while a reload that keeps the pass-through judges the notes
// (noted after that judgement began, or subscribed upstream after its drop), if the new rules forbid its URI:
// its answer, carried by an older configuration's pass-through than the one whose rules judged last, has the
// URI judged under those rules. Until 5 December it stayed subscribed upstream until a later reload.
// Only the subscribe, unsubscribe and DELETE of such a session are read here: other calls cost a method test.

import type { Logger } from '../log/logger.js';
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

/**
 * How many passes (reloads) in a row may fail to have the upstream drop one subscription before it is
 * forgotten: a session the upstream no longer knows refuses every drop, and would be asked at every reload.
 */
const MAX_DROP_TRIES = 3;

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
  /** The passes that failed to drop a URI, by URI: absent until one fails. */
  failedDrops?: Map<string, number>;
}

export class PassThroughSubscriptions {
  /** By member, then by the upstream's session id. */
  private readonly bySession = new Map<Upstream, Map<string, SessionSubscriptions>>();
  /** The member whose sessions keepOnly last kept (null: none); undefined until a configuration is adopted. */
  private kept: Upstream | null | undefined;
  /**
   * The rules that last judged the notes (rejudge), and the configuration's pass-through (its SingleUpstream)
   * they came with: a subscribe another one carried was let through by other rules. Undefined until a judgement.
   */
  private judged: { carrier: Upstream; mayKeep: SubscriptionJudge } | undefined;

  constructor(private readonly log: Logger) {}

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
    this.kept = member ?? null;
    // Rules of a configuration no longer served judge nothing more: not held, they can be let go of.
    if (member === undefined) this.judged = undefined;
    for (const [owner, sessions] of [...this.bySession]) {
      if (owner === member) continue;
      this.bySession.delete(owner);
      void this.dropAll(owner, sessions);
    }
  }

  /**
   * A `resources/subscribe` that `carrier` (a configuration's pass-through of `member`) carried has been
   * answered (`ctx`, noted as it went up). When a reload retired that pass-through meanwhile, the upstream's
   * session holds a subscription that keepOnly's drops missed (noted after them, or subscribed upstream after
   * its drop was asked), so it is asked to drop it now, after its subscribe, never before. When a reload kept
   * it but its rules judged the notes since (`carrier` is not the pass-through they came with), the subscribe
   * was let through by the older rules and rejudge may have missed it the same ways: its URI is judged under
   * the newer rules, and dropped likewise if they forbid it. A failed drop stays noted, as keepOnly's do.
   * Any other subscribe costs a comparison more.
   */
  answered(member: Upstream, carrier: Upstream, ctx: CallContext): void {
    if (this.kept === undefined || ctx.sessionId === undefined || member.unsubscribeSession === undefined) return;
    // Undefined: the pass-through was retired, and the subscription is dropped whatever its URI.
    let mayKeep: SubscriptionJudge | undefined;
    if (this.kept === member) {
      const judged = this.judged;
      if (judged === undefined || judged.carrier === carrier) return;
      mayKeep = judged.mayKeep;
    }
    const uri = (ctx.message as { params?: { uri?: unknown } } | undefined)?.params?.uri;
    if (typeof uri !== 'string') return;
    const late: SessionSubscriptions = { principal: ctx.principal, capabilities: ctx.clientCapabilities, version: ctx.version, uris: new Set([uri]) };
    void (mayKeep === undefined ? this.dropLate(member, ctx.sessionId, late, uri) : this.dropIfForbidden(member, ctx.sessionId, late, uri, mayKeep));
  }

  /** A subscribe answered after newer rules judged the notes: dropped as a late one if they forbid its URI. */
  private async dropIfForbidden(member: Upstream, sessionId: string, late: SessionSubscriptions, uri: string, mayKeep: SubscriptionJudge): Promise<void> {
    if (await allowed(mayKeep, late, uri)) return;
    await this.dropLate(member, sessionId, late, uri);
  }

  private async dropLate(member: Upstream, sessionId: string, late: SessionSubscriptions, uri: string): Promise<void> {
    // Noted after keepOnly (under a member no longer served): this drop takes it over.
    const sessions = this.bySession.get(member);
    const noted = sessions?.get(sessionId);
    if (noted !== undefined) {
      noted.uris.delete(uri);
      if (noted.uris.size === 0) sessions!.delete(sessionId);
    }
    if (await drop(member, sessionId, late, uri)) return;
    if (late.uris.size > 0) this.noteAgain(member, sessionId, late);
    this.warnFailed(member, 1);
  }

  /**
   * Asks `member` to drop, in each session, every subscription `mayKeep` no longer allows (one that cannot
   * be judged is not kept), one URI at a time. Returns how many were dropped. `carrier` is the pass-through
   * of the configuration whose rules `mayKeep` are: subscribes older ones carry are judged when answered.
   */
  async rejudge(member: Upstream, mayKeep: SubscriptionJudge, carrier: Upstream): Promise<number> {
    this.judged = { carrier, mayKeep };
    const sessions = this.bySession.get(member);
    if (sessions === undefined || member.unsubscribeSession === undefined) return 0;
    let dropped = 0;
    let failed = 0;
    for (const [sessionId, session] of [...sessions]) {
      for (const uri of [...session.uris]) {
        if (await allowed(mayKeep, session, uri)) continue;
        if (await drop(member, sessionId, session, uri)) dropped++;
        else failed++;
      }
      if (session.uris.size === 0 && sessions.get(sessionId) === session) sessions.delete(sessionId);
    }
    this.warnFailed(member, failed);
    return dropped;
  }

  /**
   * Asks `owner` to drop each subscription of `sessions`, one after another. Those it fails to drop are noted
   * again, for the next reload's keepOnly (or, should it pass `owner` through again, rejudge) to ask again.
   */
  private async dropAll(owner: Upstream, sessions: Map<string, SessionSubscriptions>): Promise<void> {
    let failed = 0;
    for (const [sessionId, session] of sessions) {
      for (const uri of [...session.uris]) if (!(await drop(owner, sessionId, session, uri))) failed++;
      if (session.uris.size > 0) this.noteAgain(owner, sessionId, session);
    }
    this.warnFailed(owner, failed);
  }

  /** Puts back a session whose drops failed, its URIs joining any noted for it since. */
  private noteAgain(owner: Upstream, sessionId: string, session: SessionSubscriptions): void {
    let sessions = this.bySession.get(owner);
    if (sessions === undefined) this.bySession.set(owner, (sessions = new Map()));
    const since = sessions.get(sessionId);
    if (since === undefined) {
      if (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value!);
      sessions.set(sessionId, session);
      return;
    }
    for (const uri of session.uris) if (since.uris.size < MAX_RESOURCE_SUBSCRIPTIONS) since.uris.add(uri);
  }

  /** Once per pass: what the upstream still watches though it was asked to let go. */
  private warnFailed(owner: Upstream, failed: number): void {
    if (failed > 0) this.log.warn('the upstream did not drop resource subscriptions legacy sessions made through the pass-through; they stay noted, and the next reload asks again', { upstream: owner.name, failed, maxTries: MAX_DROP_TRIES });
  }
}

/**
 * Asks `owner` to drop `uri` from `session` (unsubscribeSession never rejects). Dropped, or failed for the
 * MAX_DROP_TRIES-th time, it is no longer noted; otherwise it stays, its failed tries counted.
 */
async function drop(owner: Upstream, sessionId: string, session: SessionSubscriptions, uri: string): Promise<boolean> {
  const dropped = (await owner.unsubscribeSession?.(sessionId, session.version, uri)) === true;
  // The client may have unsubscribed meanwhile (note): nothing is left to ask again.
  const tries = dropped || !session.uris.has(uri) ? MAX_DROP_TRIES : (session.failedDrops?.get(uri) ?? 0) + 1;
  if (tries >= MAX_DROP_TRIES) {
    session.uris.delete(uri);
    session.failedDrops?.delete(uri);
  } else (session.failedDrops ??= new Map()).set(uri, tries);
  return dropped;
}
