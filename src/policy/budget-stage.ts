// The budget stage, for tools/call: the first entry of policy.budgets that selects the call spends its
// cost (default 1) from the caller's (or tenant's, key's, tool's) budget for the current calendar window in
// the store. A spent budget refuses the call with `budget_exhausted`, a tool result whose text says when to
// retry, with `_meta["dev.gatehouse/retry_after"]` (seconds) and `_meta["dev.gatehouse/quota"]`
// (`{limit, used, window, resetsAt}`). A store that cannot answer fails the call closed.
//
// A budget counts the calls that run. When a later stage holds the call back before it reaches the
// upstream (an open breaker, an approval still pending or refused, an idempotency refusal) or answers it
// without a run (an idempotency replay, a confirmation asked of the user), or the upstream refused the
// connection or the adapter refused the request itself (it never left), the spend is given back before the answer leaves, so a client that
// retries while its call waits for a reviewer, or while its upstream is down, does not spend its budget on that.
// A stage that answers with a stream and learns only later that the call will not run (a legacy client's
// user declining the confirmation asked on that stream) gives it back through `ctx.giveBack`.

import type { Budget } from '../config/schema.generated.js';
import { failure, GatewayError, neverSent, type ToolRefusal } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { CallContext, Route } from '../pipeline/context.js';
import type { Outcome } from '../pipeline/outcome.js';
import { waitedOn, waitedOnAnswer } from '../pipeline/events.js';
import type { Principal } from '../pipeline/principal.js';
import { refuseAt, type Stage } from '../pipeline/stage.js';
import { interceptFinal } from '../pipeline/final-answer.js';
import type { Answer, BudgetSpend, CalendarWindow } from '../store/store.js';
import { compileSelector, firstMatch, type Selector } from './selector.js';
import { toolTarget } from './rate-limits.js';
import { keyName, tenantName } from './caller-names.js';

export interface CompiledBudget {
  id: string;
  per: Budget['per'];
  window: CalendarWindow;
  limit: number;
  cost: number;
  selector: Selector;
}

export type SpendBudget = (key: string, amount: number, limit: number, window: CalendarWindow) => Answer<BudgetSpend>;
/** Gives back what a spend took, from the window that ends at `resetsAt`. */
export type RefundBudget = (key: string, amount: number, window: CalendarWindow, resetsAt: number) => Promise<void>;

/** The stages after this one that answer a call without running it. */
const HELD_BACK_BY = new Set(['breaker', 'approval', 'idempotency']);

/**
 * Whether the call ended without the tool running for it: held back by a later stage, or failed before it
 * reached the upstream (the connection was refused: while an upstream was down, each try once spent the
 * budget of calls that never ran, and the caller was refused budget_exhausted once it was back), or refused
 * by the adapter itself before anything went up (a protocol refusal: a request id held by a running call).
 */
export function didNotRun(outcome: Outcome, ctx: CallContext): boolean {
  if (ctx.heldBack !== undefined) return true;
  if (outcome.kind !== 'refused') return false;
  if (outcome.stage !== undefined && HELD_BACK_BY.has(outcome.stage)) return true;
  if (outcome.stage === 'upstream' && outcome.refusal.kind === 'protocol') return true;
  return outcome.refusal.kind === 'failure' && neverSent(outcome.refusal.error);
}

/** The prefix of every budget counter in the store (`gatehouse budgets show` lists them). */
export const BUDGET_PREFIX = 'budget:';

export function compileBudgets(entries: readonly Budget[]): CompiledBudget[] {
  return entries.map((b) => ({ id: b.id, per: b.per, window: b.window, limit: b.limit, cost: b.cost ?? 1, selector: compileSelector(b) }));
}

/** `budget:<id>:<per>:<who>`: whose counter a call spends from (caller-names.ts: tenants and keys apart from fallbacks). */
export function budgetKey(b: CompiledBudget, p: Principal, route: Route): string {
  const who = b.per === 'subject' ? `${p.via}:${p.subject}` : b.per === 'tenant' ? tenantName(p) : b.per === 'key' ? keyName(p) : toolTarget(route, b.selector);
  return `${BUDGET_PREFIX}${b.id}:${b.per}:${who}`;
}

export function compileBudgetStage(budgets: readonly CompiledBudget[], spend: SpendBudget, refund: RefundBudget, log: Logger): Stage {
  return {
    name: 'budget',
    applies: (ctx) => budgets.length > 0 && ctx.method === 'tools/call' && ctx.route !== undefined,
    async run(ctx, next) {
      const route = ctx.route!;
      const budget = firstMatch(budgets, ctx.principal, route);
      if (budget === undefined || budget.cost === 0) return next(ctx);
      const key = budgetKey(budget, ctx.principal, route);
      let spent: BudgetSpend;
      try {
        // Spent at once (the usual case): not awaited, as the rate limit's token.
        const answer = waitedOnAnswer(ctx, 'budget', 'store.spend', spend(key, budget.cost, budget.limit, budget.window));
        spent = answer instanceof Promise ? await answer : answer;
      } catch (err) {
        return refuseAt('budget', ctx, failure(new GatewayError('GW_ERR_STATE_UNAVAILABLE', 'The budget of this call cannot be checked now, so the call is not run; retry later', undefined, { cause: err })));
      }
      if (!spent.allowed) return refuseAt('budget', ctx, exhausted(budget, route, spent));
      let given = false;
      const giveBack = async (): Promise<void> => {
        if (given) return;
        given = true;
        try {
          await waitedOn(ctx, 'budget', 'store.refund', refund(key, budget.cost, budget.window, spent.resetsAt));
        } catch (err) {
          // The spend stays: the budget counts one call too many, never one too few.
          log.warn('a budget spend could not be given back', { callId: ctx.callId, rule: budget.id, err });
        }
      };
      ctx.giveBack = giveBack;
      const outcome = await next(ctx);
      if (didNotRun(outcome, ctx)) await giveBack();
      else if (outcome.kind === 'stream') {
        // An adapter that answers with a stream reports on it a call it could not send (a bridge out of
        // sessions for the caller): given back when that answer ends the stream.
        return interceptFinal(outcome, ctx, async ({ failure: failed }) => {
          if (failed !== undefined && neverSent(failed)) await giveBack();
          return undefined;
        });
      }
      return outcome;
    },
  };
}

/** The refusal; the wait is the store's (on Redis, Redis' clock, as the window's end is). */
function exhausted(b: CompiledBudget, route: Route, spent: BudgetSpend): ToolRefusal {
  const retryAfter = Math.max(1, Math.ceil(spent.resetsInMs / 1000));
  const resetsAt = new Date(spent.resetsAt).toISOString();
  const unit = b.cost === 1 ? 'calls' : 'units';
  return {
    kind: 'tool',
    code: 'budget_exhausted',
    message: `Budget "${b.id}" is spent: ${spent.used} of ${b.limit} ${unit} per ${b.window} (per ${b.per})${b.cost !== 1 ? `, and this call costs ${b.cost}` : ''}. It resets at ${resetsAt}; retry in ${humanSeconds(retryAfter)}.`,
    details: { rule: b.id, per: b.per },
    meta: { 'dev.gatehouse/tool_ref': route.ref, 'dev.gatehouse/retry_after': retryAfter, 'dev.gatehouse/quota': { limit: b.limit, used: spent.used, window: b.window, resetsAt } },
    rule: b.id,
  };
}

function humanSeconds(s: number): string {
  if (s < 120) return `${s} s`;
  if (s < 7_200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3_600)} h`;
  return `${Math.round(s / 86_400)} days`;
}
