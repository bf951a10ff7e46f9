// The idempotency stage, for write tools (the FITsociety seed: "every write tool call must include a
// unique key in params._meta.idempotencyKey"): a write without a usable key is refused before anything
// runs; the first call with a key runs and its answer is stored before it is returned; the same key with
// the same request gets that answer again without a second run; with another request, a conflict. A
// duplicate that arrives while the first is running waits for it. A key whose call was cut short (the
// process died, the answer could not be stored) is never run again blindly: it is `outcome_unknown`.

import { randomUUID } from 'node:crypto';
import { failure, GatewayError, neverSent, type ToolRefusal } from '../errors.js';
import { interceptFinal, refusalAlreadyPublished, type FinalAnswer } from '../pipeline/final-answer.js';
import type { CallContext, Route } from '../pipeline/context.js';
import { publishRefused, waitedOn } from '../pipeline/events.js';
import type { Outcome } from '../pipeline/outcome.js';
import { principalKey } from '../pipeline/principal.js';
import { refuseAt, type Stage } from '../pipeline/stage.js';
import { canonicalJson } from '../protocol/canonical-json.js';
import { toLegacyResult, toModernResult } from '../protocol/era-shapes.js';
import type { ClientEra } from '../protocol/versions.js';
import type { JsonRpcRequest, JsonRpcResponse } from '../protocol/jsonrpc.js';
import { sha256Hex } from '../protocol/sha256.js';
import type { IdempotencyClaim, IdempotencyRecord } from '../store/store.js';
import { compileGlob, type Glob } from './glob.js';
import { inexactLiteralsIn } from '../protocol/inexact-numbers.js';

/** Where a write's key travels (the FITsociety seed). */
export const IDEMPOTENCY_META = 'idempotencyKey';
/** Long enough to be unique, short and plain enough to index and log. */
const KEY_SHAPE = /^[A-Za-z0-9][A-Za-z0-9._:-]{7,254}$/;
/**
 * How long a running call holds its key before others may call it lost; renewed at a third of it while
 * it runs. Short for the local file (renewing is cheap, and a restarted process finds its lost calls
 * soon), longer for Redis (a replica's renewal crosses the network).
 */
const LEASE_MS = { sqlite: 5_000, redis: 15_000 } as const;
/** How often a duplicate looks again at a key another call is running: soon at first, then once a second. */
const POLL_MS = 100;
const POLL_SLOW_MS = 1_000;
const POLL_FAST_FOR_MS = 5_000;
/** A duplicate waits for the first call's limit and this much more: the first's answer is stored after it. */
const STORE_MARGIN_MS = 5_000;
/** How many times a duplicate tries to take a key the first call gave back (it never ran) before giving up. */
const MAX_RECLAIMS = 3;
/** A claim that failed is given back in case it was taken: first after this long, then twice as long each time. */
const GIVE_BACK_FIRST_MS = 250;
const GIVE_BACK_TRIES = 6;

export interface IdempotencySettings {
  /** False: a write without a key runs unprotected instead of being refused. */
  requireKeys: boolean;
  ttlSeconds: number;
  /** Tool refs that are writes even without annotations saying so. */
  tools: string[];
  /** Tool refs that are never treated as writes. */
  exempt: string[];
}

/** The store operations the stage needs, each failing closed (through the store guard). */
export interface IdempotencyStore {
  kind: 'sqlite' | 'redis';
  claim(key: string, digest: string, owner: string, leaseMs: number, ttlMs: number): Promise<IdempotencyClaim>;
  renew(key: string, owner: string, leaseMs: number): Promise<void>;
  /** False when the key is no longer this owner's running call (the answer was not stored). */
  complete(key: string, owner: string, response: string, ttlMs: number): Promise<boolean>;
  release(key: string, owner: string): Promise<void>;
  read(key: string): Promise<IdempotencyRecord | undefined>;
}

/** Whether a tool is a write: annotated as one (readOnlyHint false, destructiveHint true), or listed. */
export function isWrite(route: Route, settings: { tools: Glob[]; exempt: Glob[] }): boolean {
  if (settings.exempt.some((g) => g.test(route.ref))) return false;
  if (settings.tools.some((g) => g.test(route.ref))) return true;
  const a = route.annotations;
  return a !== undefined && (a.readOnlyHint === false || a.destructiveHint === true);
}

/**
 * The longest a call on `route` may run (its upstream's `timeouts.callMs` or stdio `requestMs`, or the
 * tool's own limit): a duplicate waits for the first call that long.
 */
export type RunLimit = (route: Route) => number;

export function compileIdempotencyStage(settings: IdempotencySettings, store: IdempotencyStore, runLimit: RunLimit): Stage {
  const globs = { tools: settings.tools.map((g) => compileGlob(g)), exempt: settings.exempt.map((g) => compileGlob(g)) };
  const ttlMs = settings.ttlSeconds * 1000;
  /** This process: owners of the form `<instance>:<call>` are ours, and alive while in this set. */
  const instance = randomUUID();
  const running = new Set<string>();

  const refuse = (ctx: CallContext, code: ToolRefusal['code'], message: string): Outcome => refuseAt('idempotency', ctx, { kind: 'tool', code, message, ...(ctx.route ? { meta: { 'dev.gatehouse/tool_ref': ctx.route.ref } } : {}) });

  const leaseMs = LEASE_MS[store.kind];
  /** A call of this process is alive while it runs here; another's while its lease is renewed. */
  const ownerAlive = (owner: string, leaseUntil: number): boolean => (owner.startsWith(`${instance}:`) ? running.has(owner) : leaseUntil > Date.now());

  /**
   * The stored answer, given to this request (its own id, marked as a replay) in the shape of its client's
   * era: the key may have been first used by a client of the other one (a legacy answer has no `resultType`,
   * which a 2026-07-28 client refuses; a modern one carries fields a legacy client does not know).
   */
  const replay = (ctx: CallContext, stored: string): Outcome => {
    const response = JSON.parse(stored) as JsonRpcResponse;
    const id = (ctx.message as JsonRpcRequest).id;
    const result = response.result ? resultForEra(response.result, ctx.era) : undefined;
    ctx.heldBack = 'replay';
    const message: JsonRpcResponse = result ? { ...response, id, result: { ...result, _meta: { ...(result._meta as object | undefined), 'dev.gatehouse/replayed': true } } } : { ...response, id, ...(response.error ? { error: markedError(response.error) } : {}) };
    return { kind: 'json', status: 200, message };
  };

  const unknown = (ctx: CallContext): Outcome => refuse(ctx, 'outcome_unknown', 'A call with this idempotency key was started and did not finish; it is not run again, because it may have taken effect. Check its effect, then use a new key');

  /**
   * A claim that failed may still have been taken: Redis ran it and the connection broke before its answer
   * came (redis-store.ts never sends it again). The call is refused before it runs, so the key is released
   * (which frees only this owner's in-flight claim), retried until the store answers. Until then the owner
   * counts as running here, so a retry waits for the key instead of calling a call that never ran
   * `outcome_unknown` (another replica waits out the claim's lease the same way).
   */
  const giveBack = (key: string, owner: string): void => {
    running.add(owner);
    let tries = 0;
    const attempt = (): void => {
      store.release(key, owner).then(
        () => running.delete(owner),
        () => {
          if (++tries >= GIVE_BACK_TRIES) return void running.delete(owner);
          setTimeout(attempt, GIVE_BACK_FIRST_MS * 2 ** (tries - 1)).unref();
        },
      );
    };
    setTimeout(attempt, 0).unref();
  };

  /**
   * Waits for another call under the same key to finish, for as long as that call may run (README: the
   * duplicate "waits for it and gets its answer"): its answer; `free` when it gave the key back (it never
   * ran: the connection was refused, or it stopped to ask the client for input), so this call may take it;
   * or unknown when it ended without an answer, or ran past its limit.
   */
  const awaitOther = async (ctx: CallContext, key: string, digest: string): Promise<Outcome | 'free'> => {
    const started = Date.now();
    const deadline = started + runLimit(ctx.route!) + STORE_MARGIN_MS;
    while (Date.now() < deadline && !ctx.cancel.aborted) {
      await new Promise((r) => setTimeout(r, Date.now() - started < POLL_FAST_FOR_MS ? POLL_MS : POLL_SLOW_MS));
      const record = await waitedOn(ctx, 'idempotency', 'store.read', store.read(key));
      if (record === undefined) return 'free';
      if (record.digest !== digest) return refuse(ctx, 'idempotency_key_conflict', 'This idempotency key was used for a different request; use a new key for a new request');
      if (record.state === 'done') return replay(ctx, record.response);
      if (!ownerAlive(record.owner, record.leaseUntil)) break;
    }
    return unknown(ctx);
  };

  return {
    name: 'idempotency',
    applies: (ctx) => ctx.method === 'tools/call' && ctx.route !== undefined && isWrite(ctx.route, globs),
    async run(ctx, next) {
      const route = ctx.route!;
      const params = (ctx.message as JsonRpcRequest).params!;
      const given = (params._meta as Record<string, unknown> | undefined)?.[IDEMPOTENCY_META];
      if (given === undefined && !settings.requireKeys) return next(ctx);
      if (typeof given !== 'string' || !KEY_SHAPE.test(given)) {
        return refuse(ctx, 'idempotency_key_required', `"${route.publicName}" changes things: send a unique key in params._meta.${IDEMPOTENCY_META} (8 to 255 letters, digits, ".", "_", ":" or "-"), and the same key only to retry this very call`);
      }
      // Keys are the caller's own: one caller's key never replays another caller's answer.
      const key = sha256Hex(`${principalKey(ctx.principal)}\u0000${route.ref}\u0000${given}`);
      // Arguments compared as read, and a number JSON.parse cannot read exactly as the client wrote it: two
      // accounts that read as one double (2^53 + 1 and 2^53) are two requests, as the upstream (given the
      // client's bytes) may see them. Without such a number the digest is what it always was.
      const inexact = ctx.body !== undefined ? inexactLiteralsIn(ctx.body.toString('utf8'), params.arguments) : [];
      const digest = sha256Hex(canonicalJson({ ref: route.ref, arguments: params.arguments ?? {}, ...(inexact.length > 0 ? { inexact } : {}) }));
      const owner = `${instance}:${ctx.callId}`;
      for (let attempt = 0; ; attempt++) {
        running.add(owner);
        let waited: Outcome | 'free';
        let claim: IdempotencyClaim;
        try {
          claim = await waitedOn(ctx, 'idempotency', 'store.claim', store.claim(key, digest, owner, leaseMs, ttlMs));
        } catch (err) {
          giveBack(key, owner);
          return refuseAt('idempotency', ctx, stateUnavailable(err));
        }
        try {
          if (claim.outcome !== 'existing') break;
          running.delete(owner);
          const record = claim.record;
          if (record.digest !== digest) return refuse(ctx, 'idempotency_key_conflict', 'This idempotency key was used for a different request; use a new key for a new request');
          if (record.state === 'done') return replay(ctx, record.response);
          if (!ownerAlive(record.owner, record.leaseUntil)) return unknown(ctx);
          waited = await awaitOther(ctx, key, digest);
        } catch (err) {
          running.delete(owner);
          return refuseAt('idempotency', ctx, stateUnavailable(err));
        }
        if (waited !== 'free') return waited;
        // The first call gave the key back without running: this one may take it (a few times, against a
        // key handed back and taken by others in turn).
        if (attempt + 1 >= MAX_RECLAIMS) return unknown(ctx);
      }
      const renewal = setInterval(() => void store.renew(key, owner, leaseMs).catch(() => {}), leaseMs / 3);
      renewal.unref();
      const done = (): void => {
        clearInterval(renewal);
        running.delete(owner);
        // An HTTP+SSE session's cancellation outlives the call: leave nothing registered on it.
        ctx.cancel.offCancel(done);
      };
      // A client that leaves takes its answer with it: the key stays taken and a retry learns the outcome is unknown.
      ctx.cancel.onCancel(done);
      let outcome: Outcome;
      try {
        outcome = await next(ctx);
      } catch (err) {
        done();
        throw err;
      }
      return interceptFinal(outcome, ctx, async (answer) => {
        const { response, failure: failed } = answer;
        try {
          const error = failed ?? (outcome.kind === 'refused' && outcome.refusal.kind === 'failure' ? outcome.refusal.error : undefined);
          if (error !== undefined) {
            // A request that never left lets a retry run; otherwise the upstream may have acted, the key
            // stays taken, and a retry is told the outcome is unknown.
            if (neverSent(error)) await waitedOn(ctx, 'idempotency', 'store.release', store.release(key, owner));
            return undefined;
          }
          // Refused by Gatehouse itself after this stage (an adapter's protocol refusal: a request id in flight
          // already, a 2025-11-25 task on a bridge): nothing went upstream, so a retry may run.
          if (outcome.kind === 'refused' && outcome.refusal.kind === 'protocol') {
            await waitedOn(ctx, 'idempotency', 'store.release', store.release(key, owner));
            return undefined;
          }
          // A run that stopped to ask the client for input (2026-07-28 mrtr.mdx) has not finished: its answer
          // is not the call's, and must not be replayed (results of MRTR retries are not cached). The key is
          // given back, so the retry that carries the answers runs, and its answer is the one kept.
          if ((response?.result as { resultType?: unknown } | undefined)?.resultType === 'input_required') {
            await waitedOn(ctx, 'idempotency', 'store.release', store.release(key, owner));
            return undefined;
          }
          // The FITsociety seed: the completed response is persisted before it is returned.
          const stored = await waitedOn(ctx, 'idempotency', 'store.complete', store.complete(key, owner, JSON.stringify(response), ttlMs));
          // Not stored (the record is gone): the README promises the answer is kept before it is returned.
          if (!stored) return withheld(ctx, outcome, answer, failure(new GatewayError('GW_ERR_STATE_UNAVAILABLE', 'The idempotency record of this call was lost while it ran, so its answer could not be kept and is withheld; check its effect before calling again with a new key')));
          return undefined;
        } catch (err) {
          return withheld(ctx, outcome, answer, stateUnavailable(err));
        } finally {
          done();
        }
      });
    },
  };
}

/**
 * A stored JSON-RPC error, replayed: it has no `_meta`, so the mark goes in its `data` (an object, or none
 * yet). Unmarked, a client retrying after an internal error took the same error for the upstream failing
 * anew, when nothing had run. Data of another type is the upstream's to shape: left as it is.
 */
function markedError(error: NonNullable<JsonRpcResponse['error']>): NonNullable<JsonRpcResponse['error']> {
  const data: unknown = error.data;
  if (data !== undefined && (typeof data !== 'object' || data === null || Array.isArray(data))) return error;
  return { ...error, data: { ...(data as Record<string, unknown> | undefined), 'dev.gatehouse/replayed': true } };
}

/** A stored tools/call result as a client of `era` must get it (only complete results are stored). */
function resultForEra(result: Record<string, unknown>, era: ClientEra): Record<string, unknown> {
  return era === 'modern' ? toModernResult('tools/call', result, undefined, { ttlMs: 0, cacheScope: 'private' }) : toLegacyResult(result);
}

/**
 * The answer withheld by this stage: a refusal like refuseAt's, published so the metrics' refusals and the
 * span count it (the edge records it with its stage from the verdict, on every answer shape); not when the
 * answer withheld was a refusal a stage published already, which the call is counted by.
 */
function withheld(ctx: CallContext, outcome: Outcome, answer: FinalAnswer, refusal: ReturnType<typeof failure>): { refusal: ReturnType<typeof failure>; stage: 'idempotency' } {
  if (!refusalAlreadyPublished(outcome, answer)) publishRefused(ctx, 'idempotency', refusal);
  return { refusal, stage: 'idempotency' };
}

function stateUnavailable(err: unknown): ReturnType<typeof failure> {
  return failure(new GatewayError('GW_ERR_STATE_UNAVAILABLE', 'The idempotency record of this call cannot be kept now, so the call is not answered; retry later with the same key', undefined, { cause: err }));
}
