// The approval stage, for tools/call (the SOIT seed: "A tool whose policy requires approval does not run on
// the first call"). The first rule of policy.approvals that selects the call decides that it needs one.
// Nothing is forwarded until the approval bound to exactly this call (caller, upstream, tool, arguments,
// policy version) is approved; until then the caller gets `approval_pending` with the approval id, and
// calling again with the same arguments finds the same approval. A rejection answers `approval_rejected`
// with the reason, a deadline passed `approval_expired`. A call that needs a new approval while its caller
// already has `approvals.maxPendingPerCaller` waiting is answered `approval_limit_reached`, and nothing is
// opened. A store that cannot answer fails the call closed.
//
// `by: user` rules ask the person at the client first, through elicitation (user-confirmation.ts), when the
// client can be asked; otherwise a reviewer decides. An approved run that the upstream interrupts to ask the
// client for input (MRTR) goes on when the client retries the same call with its answers, once, without
// asking for approval again.

import { failure, GatewayError, neverSent, type ToolRefusal } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { CallStream } from '../pipeline/call-stream.js';
import type { CallContext } from '../pipeline/context.js';
import { interceptFinal } from '../pipeline/final-answer.js';
import { ACCEPTED, type Outcome } from '../pipeline/outcome.js';
import { pipeOutcome } from '../pipeline/outcome-stream.js';
import { waitedOn } from '../pipeline/events.js';
import { refuseAt, type Next, type Stage } from '../pipeline/stage.js';
import { didNotRun } from '../policy/budget-stage.js';
import { ErrorCode, type JsonRpcId, type JsonRpcRequest } from '../protocol/jsonrpc.js';
import { effectiveState, type Approval } from './approval.js';
import { ApprovalBook, type ApprovalVerdict, type CallToApprove, type OpenLimits } from './book.js';
import { hasInexactNumber } from '../protocol/inexact-numbers.js';
import { approvalRuleFor, type CompiledApprovalRule } from './rules.js';
import { CONFIRM_KEY, CONFIRM_STATE_PREFIX, confirmationChannel, confirmationRequest, PendingConfirmations, readAnswer, type UserAnswer } from './user-confirmation.js';

export const APPROVAL_ID_META = 'dev.gatehouse/approval_id';
/** How long the upstream's requestState of an approved run stays good for the client's retry. */
const CONTINUATION_MS = 15 * 60_000;
/** The longest a legacy client's stream is held open waiting for the user. */
const MAX_USER_WAIT_MS = 10 * 60_000;
/** A comment on the held stream this often keeps idle proxies from closing it. */
const KEEPALIVE_MS = 15_000;

export function compileApprovalStage(rules: readonly CompiledApprovalRule[], book: ApprovalBook, policyVersion: string, limits: OpenLimits, confirmations: PendingConfirmations, log: Logger): Stage {
  const unavailable = (ctx: CallContext, err: unknown): Outcome =>
    refuseAt('approval', ctx, failure(new GatewayError('GW_ERR_STATE_UNAVAILABLE', 'The approval of this call cannot be checked now, so the call is not run; retry later', undefined, { cause: err })));

  /**
   * What the stages after an approved run began threw is theirs, not the approval book's: it is answered
   * (and audited) as an internal error of the upstream stage, never as "approval could not be checked",
   * which the stages before take for a call that did not run (a budget would give its spend back).
   */
  const failedAfterApproval = (ctx: CallContext, err: unknown): Outcome => {
    log.error('a stage after an approved run failed', { callId: ctx.callId, err });
    return refuseAt('upstream', ctx, { kind: 'transport', code: 'internal_error', status: 500, rpcCode: ErrorCode.InternalError, message: 'Internal gateway error' });
  };

  /** Runs an approved call; a run that never reached the upstream is given back, an MRTR continuation remembered. */
  const runApproved = async (ctx: CallContext, approval: Approval, run: number | undefined, next: Next): Promise<Outcome> => {
    // The run stays under way (its claim renewed) until its final answer, for identical calls meanwhile.
    const release = run === undefined ? () => {} : book.holdRun(approval, run, ctx.callId);
    let outcome: Outcome;
    try {
      outcome = await next(ctx);
    } catch (err) {
      release();
      throw new AfterApproval(err);
    }
    // Held back after this stage: refused by a later one, or answered with an idempotency key's stored
    // result (a replay), which runs nothing upstream and so neither uses the run nor records it `executed`.
    const heldBackLater = (outcome.kind === 'refused' && outcome.stage !== undefined && outcome.stage !== 'upstream' && outcome.stage !== 'output') || ctx.heldBack === 'replay';
    return interceptFinal(outcome, ctx, async ({ response, failure: failed }) => {
      release();
      try {
        if (run !== undefined && (heldBackLater || (failed !== undefined && neverSent(failed)))) await waitedOn(ctx, 'approval', 'store.release_run', book.releaseRun(approval, run, ctx.callId));
        else if (run !== undefined) await waitedOn(ctx, 'approval', 'store.ran_run', book.ranRun(approval, run, ctx.callId));
        if (response.result?.resultType === 'input_required') await waitedOn(ctx, 'approval', 'store.continue', book.continueWith(approval, CONTINUATION_MS));
      } catch (err) {
        log.warn('an approved run could not be given back or continued; the caller may need a new approval', { approval: approval.id, err });
      }
      return undefined;
    });
  };

  return {
    name: 'approval',
    applies: (ctx) => (rules.length > 0 && ctx.method === 'tools/call' && ctx.route !== undefined) || PendingConfirmations.isOurs(ctx),
    async run(ctx, next) {
      // A legacy client's answer to Gatehouse's own question goes no further than here.
      if (ctx.kind === 'response') {
        if (!confirmations.settle(ctx)) log.debug('an answer to a confirmation nobody waits for', { session: ctx.sessionId?.slice(0, 8) });
        return ACCEPTED;
      }
      const route = ctx.route!;
      const args = argumentsOf(ctx);
      const rule = approvalRuleFor(rules, ctx.principal, route, args);
      if (rule === undefined) return next(ctx);
      // The approval binds, and the reviewer sees, the arguments as read here: a number read otherwise than
      // the upstream may read it would have another number approved than the one that runs.
      if (ctx.body !== undefined && hasInexactNumber(ctx.body.toString('utf8'), args)) return refuseAt('approval', ctx, inexactRefusal(route.publicName, route.ref, rule.id));
      const call: CallToApprove = { callId: ctx.callId, principal: ctx.principal, route, args, rule, policyVersion };
      const params = (ctx.message as JsonRpcRequest).params!;
      const requestState = typeof params.requestState === 'string' ? params.requestState : undefined;
      let forward = ctx;
      try {
        const ours = requestState?.startsWith(CONFIRM_STATE_PREFIX) === true;
        if (!ours && (requestState !== undefined || params.inputResponses !== undefined)) {
          // A retry with answers to the upstream's own question: the interrupted approved run goes on, once;
          // anything else needs approval.
          const continued = await waitedOn(ctx, 'approval', 'store.continues', book.continues((await book.bindingOf(call)).binding, ctx.callId));
          const approval = continued === undefined ? undefined : await waitedOn(ctx, 'approval', 'store.get', book.get(continued));
          if (approval !== undefined) {
            ctx.approvalId = approval.id;
            return await runApproved(ctx, approval, undefined, next);
          }
        } else if (ours) {
          // The retry after Gatehouse's own question (modern): the answer decides, and the upstream never sees either field.
          forward = withoutRetryFields(ctx);
          await waitedOn(ctx, 'approval', 'store.decide', decideByUser(book, call, requestState!.slice(CONFIRM_STATE_PREFIX.length), readAnswer(inputResponse(params)), policyVersion));
        }
        const verdict = await waitedOn(ctx, 'approval', 'store.verdict', book.forCall(call, limits));
        if (verdict.kind === 'limited') return refuseAt('approval', ctx, refusalOf(verdict, call));
        ctx.approvalId = verdict.approval.id;
        forward.approvalId = verdict.approval.id;
        if (verdict.kind === 'run') {
          const outcome = await runApproved(forward, verdict.approval, verdict.run, next);
          // What the stages after this one learnt of the copy (a replay) is the call's, for the stages before.
          if (forward.heldBack !== undefined) ctx.heldBack = forward.heldBack;
          return outcome;
        }
        if (verdict.kind === 'pending' && verdict.approval.by === 'user') {
          const channel = confirmationChannel(ctx);
          if (channel === 'modern') return askModern(ctx, verdict.approval);
          if (channel === 'legacy') return askLegacy(ctx, verdict.approval, call, next);
        }
        return refuseAt('approval', ctx, refusalOf(verdict, call));
      } catch (err) {
        if (err instanceof AfterApproval) return failedAfterApproval(ctx, err.cause);
        return unavailable(ctx, err);
      }
    },
  };

  /** A modern client is asked through an InputRequiredResult; its retry carries the answer (mrtr.mdx). */
  function askModern(ctx: CallContext, approval: Approval): Outcome {
    const id = (ctx.message as JsonRpcRequest).id;
    ctx.heldBack = 'confirmation';
    const result = { resultType: 'input_required', inputRequests: { [CONFIRM_KEY]: { method: 'elicitation/create', params: confirmationRequest(approval) } }, requestState: `${CONFIRM_STATE_PREFIX}${approval.id}` };
    return { kind: 'json', status: 200, message: { jsonrpc: '2.0', id, result } };
  }

  /** A legacy client is asked on the call's own SSE stream; the call goes on (or not) on the same stream. */
  function askLegacy(ctx: CallContext, approval: Approval, call: CallToApprove, next: Next): Outcome {
    const requestId = (ctx.message as { id: JsonRpcId }).id;
    const out = new CallStream({ requestId, mode: 'call', acceptsSse: true });
    const { id, answer } = confirmations.ask(ctx, Math.max(1_000, Math.min(approval.expiresAt - Date.now(), MAX_USER_WAIT_MS)));
    void (async () => {
      const keepalive = setInterval(() => out.comment(), KEEPALIVE_MS);
      keepalive.unref();
      let response;
      try {
        out.push({ jsonrpc: '2.0', id, method: 'elicitation/create', params: confirmationRequest(approval) });
        response = await answer;
      } finally {
        clearInterval(keepalive);
      }
      // The client left while asked: the call will not run, and its budget spend goes back.
      if (out.closed) return void (await ctx.giveBack?.());
      const given = response === undefined ? { accepted: false, reason: 'the user gave no answer in time' } : response.error !== undefined ? { accepted: false, reason: `the client could not ask the user (${response.error.message})` } : readAnswer(response.result);
      await waitedOn(ctx, 'approval', 'store.decide', decideByUser(book, call, approval.id, given, policyVersion));
      const verdict = await waitedOn(ctx, 'approval', 'store.verdict', book.forCall(call, limits));
      if (verdict.kind !== 'run') await ctx.giveBack?.(); // declined or unanswered: the call will not run
      const outcome = verdict.kind === 'run' ? await runApproved(ctx, verdict.approval, verdict.run, next) : refuseAt('approval', ctx, refusalOf(verdict, call));
      // The budget stage had its answer (this stream) long ago: an accepted run a later stage held back
      // (an idempotency refusal or replay, an open breaker) gives its spend back here.
      if (verdict.kind === 'run' && didNotRun(outcome, ctx)) await ctx.giveBack?.();
      await pipeOutcome(outcome, out, ctx);
    })().catch(async (err: unknown) => {
      // The store failed before a run began: the call did not run. (A failure after it began keeps the spend.)
      if (!(err instanceof AfterApproval)) await ctx.giveBack?.();
      const refused = err instanceof AfterApproval ? failedAfterApproval(ctx, err.cause) : unavailable(ctx, err);
      void pipeOutcome(refused, out, ctx);
    });
    return { kind: 'stream', stream: out };
  }
}

/** An exception from the stages after an approved run began (see failedAfterApproval). */
class AfterApproval extends Error {
  constructor(override readonly cause: unknown) {
    super('a later stage failed');
  }
}

/** Records the user's answer on the approval it was asked for, if that approval binds this very call and waits. */
async function decideByUser(book: ApprovalBook, call: CallToApprove, approvalId: string, answer: UserAnswer, policyVersion: string): Promise<void> {
  const approval = await book.get(approvalId);
  if (approval === undefined || approval.binding !== (await book.bindingOf(call)).binding || approval.by !== 'user' || effectiveState(approval, Date.now()) !== 'pending') return;
  await book.decide(approvalId, { approve: answer.accepted, by: 'user', ...(answer.reason !== undefined ? { reason: answer.reason } : {}), policyVersion, requestId: call.callId, mayDecide: () => true });
}

function inputResponse(params: Record<string, unknown>): unknown {
  const responses = params.inputResponses;
  return typeof responses === 'object' && responses !== null ? (responses as Record<string, unknown>)[CONFIRM_KEY] : undefined;
}

/** The call as the upstream must see it: without Gatehouse's requestState and the answer to its question. */
function withoutRetryFields(ctx: CallContext): CallContext {
  const request = ctx.message as JsonRpcRequest;
  const { requestState: _state, inputResponses: _responses, ...params } = request.params!;
  const message: JsonRpcRequest = { ...request, params };
  return { ...ctx, message, body: Buffer.from(JSON.stringify(message)) };
}

function argumentsOf(ctx: CallContext): Record<string, unknown> {
  const args = (ctx.message as JsonRpcRequest).params?.arguments;
  return typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
}

/** A call whose arguments hold a number Gatehouse cannot read exactly (inexact-numbers.ts): nothing is opened. */
function inexactRefusal(tool: string, ref: string, rule: string): ToolRefusal {
  return {
    kind: 'tool',
    code: 'invalid_arguments',
    message: `"${tool}" needs approval before it runs (rule "${rule}"), and its arguments hold a number Gatehouse cannot read exactly (an integer beyond ±9007199254740991, or a number past the range of a double): a reviewer would be shown, and would approve, another number than the one sent. Nothing was run and no approval was asked for. Send such a number as a string.`,
    details: { rule },
    meta: { 'dev.gatehouse/tool_ref': ref },
    rule,
  };
}

function refusalOf(verdict: Exclude<ApprovalVerdict, { kind: 'run' }>, call: CallToApprove): ToolRefusal {
  if (verdict.kind === 'limited') {
    const { limit, pending } = verdict;
    return {
      kind: 'tool',
      code: 'approval_limit_reached',
      message: `"${call.route.publicName}" needs approval before it runs (rule "${call.rule.id}"), and this caller already has ${pending} approval${pending === 1 ? '' : 's'} pending, the most allowed at once (approvals.maxPendingPerCaller: ${limit}); nothing was run and no approval was asked for. Pending approvals must be decided by a reviewer, or expire at their deadline, before another can be asked for. Calling again with exactly the arguments of a pending approval still finds it.`,
      details: { rule: call.rule.id, limit, pending },
      meta: { 'dev.gatehouse/tool_ref': call.route.ref },
      rule: call.rule.id,
    };
  }
  const a = verdict.approval;
  const meta = { 'dev.gatehouse/tool_ref': a.toolRef, [APPROVAL_ID_META]: a.id };
  const details = { approvalId: a.id, rule: a.rule };
  if (verdict.kind === 'pending') {
    const deadline = new Date(a.expiresAt).toISOString();
    return {
      kind: 'tool',
      code: 'approval_pending',
      message: `"${a.tool}" needs approval by a reviewer before it runs (rule "${a.rule}"); nothing was run. Approval ${a.id} is pending until ${deadline}. Call again later with exactly the same arguments: once approved, that call runs. Different arguments need a new approval.`,
      details: { ...details, expiresAt: deadline },
      meta,
      rule: a.rule,
    };
  }
  if (verdict.kind === 'busy') {
    return {
      kind: 'tool',
      code: 'approval_pending',
      message: `"${a.tool}" is approved (approval ${a.id}), and its approved run is under way in another call right now; nothing was run. Call again with exactly the same arguments once that call has ended: if it did not run, this one will.`,
      details: { ...details, running: true },
      meta,
      rule: a.rule,
    };
  }
  if (verdict.kind === 'rejected') {
    const reason = a.decision?.reason;
    return {
      kind: 'tool',
      code: 'approval_rejected',
      message: `"${a.tool}" was not approved${a.decision?.by === 'user' ? ' by the user' : ' by a reviewer'}${reason ? `: ${reason}` : ''}. It was not run. Calling again with the same arguments asks for approval anew.`,
      details: { ...details, ...(reason !== undefined ? { reason } : {}) },
      meta,
      rule: a.rule,
    };
  }
  return {
    kind: 'tool',
    code: 'approval_expired',
    message: `The approval ${a.id} for "${a.tool}" ${a.decision !== undefined && a.state !== 'rejected' ? 'was not used' : 'was not decided'} before its deadline (${new Date(a.expiresAt).toISOString()}), so the call was not run. Calling again with the same arguments asks for approval anew.`,
    details: { ...details, expiredAt: new Date(a.expiresAt).toISOString() },
    meta,
    rule: a.rule,
  };
}
