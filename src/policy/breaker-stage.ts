// The circuit-breaker stage, for tools/call: the first entry of policy.breakers that selects the call
// guards its upstream or its tool. While the circuit is open, calls are refused at once with
// `upstream_unavailable` (a tool result with `_meta["dev.gatehouse/retry_after"]`); after the cool-down one
// call probes (a probe whose call never reached the upstream gives its turn to the next call). The outcome
// of each call that reached the upstream is recorded in the store, shared by
// replicas: a failure is the upstream's (unreachable, timed out, a bad answer, a JSON-RPC internal error),
// never a tool result with isError, which is the tool's answer.

import type { Breaker } from '../config/schema.generated.js';
import { failure, GatewayError, type ToolRefusal } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { Route } from '../pipeline/context.js';
import { waitedOnAnswer } from '../pipeline/events.js';
import { interceptFinal, type FinalAnswer } from '../pipeline/final-answer.js';
import { refuseAt, type Stage } from '../pipeline/stage.js';
import { ErrorCode } from '../protocol/jsonrpc.js';
import type { Answer, BreakerAdmission, BreakerSettings, BreakerState } from '../store/store.js';
import { compileSelector, firstMatch, type Selector } from './selector.js';

export interface CompiledBreaker {
  id: string;
  per: Breaker['per'];
  settings: BreakerSettings;
  selector: Selector;
}

export interface BreakerStore {
  /** A verdict at once when the store has it (a breaker row this replica holds), or a promise of it. */
  admit(key: string, settings: BreakerSettings): Answer<BreakerAdmission>;
  /** `probe`: the number the call was admitted with as the probe, if it was (Store.breakerRecord). */
  record(key: string, ok: boolean, settings: BreakerSettings, probe?: number): Promise<BreakerState>;
  /** Gives back a probe whose call never asked the upstream, so the next call probes (Store.breakerRelease). */
  release(key: string, settings: BreakerSettings, probe: number): Promise<void>;
}

/** What this replica last saw of each breaker, for the gauge. */
export class BreakerBoard {
  private readonly states = new Map<string, { breaker: string; target: string; state: BreakerState }>();
  /** The ids of the breakers the running config has; undefined: any (before the first `keepOnly`). */
  private ids: ReadonlySet<string> | undefined;

  /**
   * The running config's breakers, after a reload: the others are forgotten, and a late outcome of a call
   * they judged does not bring them back. Kept, a breaker removed (or renamed) while open was reported open
   * for as long as the process ran.
   */
  keepOnly(ids: Iterable<string>): void {
    this.ids = new Set(ids);
    for (const [key, entry] of this.states) if (!this.ids.has(entry.breaker)) this.states.delete(key);
  }

  set(breaker: string, target: string, state: BreakerState): void {
    if (this.ids !== undefined && !this.ids.has(breaker)) return;
    // Bounded by the config: one entry per breaker and upstream or tool ref the catalog routes to.
    if (this.states.size < 10_000 || this.states.has(`${breaker}\u0000${target}`)) this.states.set(`${breaker}\u0000${target}`, { breaker, target, state });
  }

  all(): Array<{ breaker: string; target: string; state: BreakerState }> {
    return [...this.states.values()];
  }
}

export function compileBreakers(entries: readonly Breaker[]): CompiledBreaker[] {
  return entries.map((b) => ({
    id: b.id,
    per: b.per,
    selector: compileSelector(b),
    settings: {
      consecutiveFailures: b.consecutiveFailures ?? 5,
      ...(b.errorRate !== undefined ? { errorRate: b.errorRate } : {}),
      minCalls: b.minCalls ?? 10,
      windowMs: (b.windowSeconds ?? 60) * 1000,
      coolDownMs: (b.coolDownSeconds ?? 30) * 1000,
    },
  }));
}

/** Failures that say the upstream is in trouble; the gateway's own (store, shutdown) do not count. */
const UPSTREAM_FAILURES = new Set(['GW_ERR_UPSTREAM_UNREACHABLE', 'GW_ERR_UPSTREAM_TIMEOUT', 'GW_ERR_UPSTREAM_BAD_RESPONSE', 'GW_ERR_UPSTREAM_EXITED', 'GW_ERR_UPSTREAM_OVERLOADED']);

/** ok, failed, or undefined when the answer says nothing about the upstream (a refusal before it). */
function upstreamHealth(answer: FinalAnswer, stage: string | undefined): boolean | undefined {
  const failed = answer.failure ?? (answer.refusal?.kind === 'failure' ? answer.refusal.error : undefined);
  if (failed !== undefined) return UPSTREAM_FAILURES.has(failed.code) ? false : undefined;
  if (answer.refusal !== undefined && stage !== 'output') return undefined;
  return answer.response.error?.code === ErrorCode.InternalError ? false : true;
}

export function compileBreakerStage(breakers: readonly CompiledBreaker[], store: BreakerStore, board: BreakerBoard, log: Logger): Stage {
  // A name no list gave (one upstream served by pass-through answers such names itself) is the caller's
  // choice: a breaker per tool would keep a circuit, a store row and a metrics series for each name a
  // caller makes up. Such calls are judged by the per-upstream breakers alone.
  const forUnlisted = breakers.filter((b) => b.per === 'upstream');
  return {
    name: 'breaker',
    applies: (ctx) => breakers.length > 0 && ctx.method === 'tools/call' && ctx.route !== undefined,
    async run(ctx, next) {
      const route = ctx.route!;
      const breaker = firstMatch(route.listed ? breakers : forUnlisted, ctx.principal, route);
      if (breaker === undefined) return next(ctx);
      const target = breaker.per === 'upstream' ? route.upstream : route.ref;
      const key = `breaker:${breaker.id}:${target}`;
      let admission: BreakerAdmission;
      try {
        // Admitted at once (the usual case): not awaited, as the rate limit's token.
        const answer = waitedOnAnswer(ctx, 'breaker', 'store.admit', store.admit(key, breaker.settings));
        admission = answer instanceof Promise ? await answer : answer;
      } catch (err) {
        return refuseAt('breaker', ctx, failure(new GatewayError('GW_ERR_STATE_UNAVAILABLE', 'The circuit state of this call cannot be read now, so the call is not run; retry later', undefined, { cause: err })));
      }
      if (admission.verdict === 'open') {
        board.set(breaker.id, target, 'open');
        return refuseAt('breaker', ctx, unavailable(breaker, route, target, admission.retryAfterMs));
      }
      board.set(breaker.id, target, admission.verdict === 'probe' ? 'half_open' : 'closed');
      const probe = admission.verdict === 'probe' ? admission.probe : undefined;
      // A probe whose call says nothing of the upstream (held back by a later stage: an approval pending, an
      // idempotency refusal or replay; or cut short) decides nothing: its turn is given back, so the next
      // call probes. Kept, it held every other call refused for one more whole cool-down, though the upstream
      // had not been asked. Given back on the side, as outcomes are recorded.
      const giveBack = (): void => {
        if (probe === undefined) return;
        store.release(key, breaker.settings, probe).catch((err: unknown) => log.warn('a circuit breaker probe could not be given back', { breaker: breaker.id, target, err }));
      };
      let outcome;
      try {
        outcome = await next(ctx);
      } catch (err) {
        giveBack();
        throw err;
      }
      const stage = outcome.kind === 'refused' ? outcome.stage : undefined;
      return interceptFinal(outcome, ctx, async (answer) => {
        // A client that left cut its own call short: that says nothing of the upstream's health. Nor does an
        // answer Gatehouse gave without asking the upstream (an idempotency replay, a question to the user):
        // counted as a success, replays reset the failures of an upstream that failed every call it was sent.
        const ok = ctx.cancel.aborted || ctx.heldBack !== undefined ? undefined : upstreamHealth(answer, stage);
        if (ok === undefined) giveBack();
        else {
          // Recorded on the side: the answer does not wait for it, and a store hiccup is only logged.
          // A probe's outcome goes with its number: only that one decides a half-open circuit.
          store.record(key, ok, breaker.settings, probe).then(
            (state) => board.set(breaker.id, target, state),
            (err: unknown) => log.warn('a circuit breaker outcome could not be recorded', { breaker: breaker.id, target, err }),
          );
        }
        return undefined;
      });
    },
  };
}

function unavailable(b: CompiledBreaker, route: Route, target: string, retryAfterMs: number): ToolRefusal {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  const what = b.per === 'upstream' ? `upstream "${target}"` : `tool "${route.publicName}"`;
  return {
    kind: 'tool',
    code: 'upstream_unavailable',
    message: `The ${what} is failing, so calls to it are paused (circuit breaker "${b.id}"); retry in ${seconds} s`,
    details: { rule: b.id, per: b.per, target },
    meta: { 'dev.gatehouse/tool_ref': route.ref, 'dev.gatehouse/retry_after': seconds },
    rule: b.id,
  };
}
