// The approval stage, for tools/call (the SOIT seed: "A tool whose policy requires approval does not run on
// the first call"). The first rule of policy.approvals that selects the call decides that it needs one.
// Nothing is forwarded until the approval bound to exactly this call (caller, upstream, tool, arguments,
// policy version) is approved; until then the caller gets `approval_pending` with the approval id, and
// calling again with the same arguments finds the same approval. A rejection answers `approval_rejected`
// with the reviewer's reason, a deadline passed `approval_expired`. A store that cannot answer fails the call
// closed.

import { failure, GatewayError, type ToolRefusal } from '../errors.js';
import type { CallContext } from '../pipeline/context.js';
import type { Outcome } from '../pipeline/outcome.js';
import { refuseAt, type Next, type Stage } from '../pipeline/stage.js';
import type { JsonRpcRequest } from '../protocol/jsonrpc.js';
import type { Approval } from './approval.js';
import type { ApprovalBook, ApprovalVerdict } from './book.js';
import { approvalRuleFor, type CompiledApprovalRule } from './rules.js';

export const APPROVAL_ID_META = 'dev.gatehouse/approval_id';

/** How a `by: user` rule asks the user, when the client can be asked (elicitation); undefined: a reviewer decides. */
export type UserConfirmation = (ctx: CallContext, rule: CompiledApprovalRule, next: Next) => Promise<Outcome> | undefined;

export function compileApprovalStage(rules: readonly CompiledApprovalRule[], book: ApprovalBook, policyVersion: string, confirmByUser?: UserConfirmation): Stage {
  return {
    name: 'approval',
    applies: (ctx) => rules.length > 0 && ctx.method === 'tools/call' && ctx.route !== undefined,
    async run(ctx, next) {
      const route = ctx.route!;
      const args = argumentsOf(ctx);
      const rule = approvalRuleFor(rules, ctx.principal, route, args);
      if (rule === undefined) return next(ctx);
      if (rule.by === 'user' && confirmByUser !== undefined) {
        const asked = confirmByUser(ctx, rule, next);
        if (asked !== undefined) return asked;
      }
      let verdict: ApprovalVerdict;
      try {
        verdict = await book.forCall({ callId: ctx.callId, principal: ctx.principal, route, args, rule, policyVersion });
      } catch (err) {
        return refuseAt('approval', ctx, failure(new GatewayError('GW_ERR_STATE_UNAVAILABLE', 'The approval of this call cannot be checked now, so the call is not run; retry later', undefined, { cause: err })));
      }
      ctx.approvalId = verdict.approval.id;
      if (verdict.kind === 'run') return next(ctx);
      return refuseAt('approval', ctx, refusalOf(verdict));
    },
  };
}

function argumentsOf(ctx: CallContext): Record<string, unknown> {
  const args = (ctx.message as JsonRpcRequest).params?.arguments;
  return typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
}

function refusalOf(verdict: Exclude<ApprovalVerdict, { kind: 'run' }>): ToolRefusal {
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
    message: `The approval ${a.id} for "${a.tool}" ${wasApproved(a) ? 'was not used' : 'was not decided'} before its deadline (${new Date(a.expiresAt).toISOString()}), so the call was not run. Calling again with the same arguments asks for approval anew.`,
    details: { ...details, expiredAt: new Date(a.expiresAt).toISOString() },
    meta,
    rule: a.rule,
  };
}

function wasApproved(a: Approval): boolean {
  return a.decision !== undefined && a.state !== 'rejected';
}
