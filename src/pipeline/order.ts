// The order of the pipeline, in one place (DESIGN.md §1, §7). Every call walks these stages; each one
// answers the call or hands it on, and knows nothing of the stages after it.
//
//   admission   edge/server.ts: connection cap, repeated headers, Host/Origin, method, body size and
//               time, JSON, media types, protocol version, headers vs body, field types, the legacy
//               session's owner, a legacy request without a session where the endpoint issues them
//                                                                 ..... 400 403 404 405 406 408 413 415 429
//   auth        edge/server.ts with auth/: failed-auth limit first, then the credential → Principal
//                                                                         ...... 400 401 403 429 503
//               then the per-address rate limit (policy.rateLimits, per: ip), before the body ... 429
//   state       store/state-stage.ts: a governed call runs only while the store can record it
//                                                                         ...... 503 GW_ERR_STATE_UNAVAILABLE
//   resolve     catalog/resolve-stage.ts: tools/call, prompts/get → route (ref, schemas, annotations)
//                                                                         ...... -32602 unknown tool or prompt
//   access      policy/access-stage.ts: the key's tool list and policy.rules; hidden = unknown ... -32602
//                                          a rule's scopes missing (onMissingScopes: challenge) ... 403
//   requestState auth/request-state-stage.ts: modern tools/call, prompts/get, resources/read: a retry's
//               requestState opened (this caller, call and arguments; not expired), every one answered
//               sealed; any legacy one refused ........................ -32602 request_state_invalid
//   pin         approvals/pin-stage.ts: the tool's definition vs the one pinned (tools.pinning)
//                                                                         ...... tool_changed (enforce)
//   arguments   policy/arguments-stage.ts: Mcp-Param-* vs body ............... 400 -32020
//                                          inputSchema .................... invalid_arguments (tool result)
//                                          an inputSchema it cannot check ... schema_unsupported (tools.uncheckableSchemas)
//                                          a call as a task (params.task) on a path that carries no
//                                          core tasks (era bridges, stdio shared/single, catalog) ... -32601
//                                          a tool with an outputSchema, or one no list of Gatehouse's
//                                          shows (a task-only tool), called as a task (params.task),
//                                          whose result the output stage could not check .. -32601 (outputValidation: enforce)
//                                          any call as a task, whose result tasks/result would
//                                          bring unrecorded ............... -32601 task_unaudited (audit.enabled)
//   egress      policy/egress-stage.ts: URLs, hosts and addresses in the arguments (tools/call,
//               prompts/get) vs policy.egress ..... egress_blocked (tool result; prompts/get: -32602)
//               a resources/read URI of a fetched scheme (http, https, ws, wss, ftp, file; not a
//               custom one), under the rule whose tool globs cover upstream/* of the upstream
//               that reads it ......................................... -32602 egress_blocked
//               (a resources/subscribe URI likewise; a subscriptions/listen's resourceSubscriptions
//               URI blocked is taken out of the filter, and left out of the acknowledgment)
//   rateLimit   policy/rate-limit-stage.ts: policy.rateLimits per subject, key, tenant, upstream, tool
//                                                                         ...... rate_limited (tool result)
//   budget      policy/budget-stage.ts: policy.budgets per calendar window ... budget_exhausted (tool result)
//   breaker     policy/breaker-stage.ts: policy.breakers per upstream or tool . upstream_unavailable
//   approval    approvals/approval-stage.ts: policy.approvals; the call runs once approved, bound to its
//               caller, tool, arguments and policy version ....... approval_pending, _rejected, _expired
//               a new one past approvals.maxPendingPerCaller for its caller ... approval_limit_reached
//               an argument number it cannot read exactly (beyond ±2^53, past a double) ... invalid_arguments
//   idempotency policy/idempotency-stage.ts: write tools need params._meta.idempotencyKey
//                                             ........ idempotency_key_required, _conflict, outcome_unknown
//                                          a key seen before: its stored answer, replayed
//   upstream    the adapter for the configured upstream(s): pass-through, era bridges, catalog, stdio
//                                                                         ...... 502 503 504 GW_ERR_*
//   output      policy/output-stage.ts: structuredContent vs outputSchema ..... invalid_output (enforce)
//   answer      pipeline/answer-event.ts: a governed call's final answer is published before it leaves,
//               and waits for its subscribers (audit/audit-trail.ts writes the record) ... 503 if it cannot
//
// Admission and auth need the HTTP request itself (the body is read only after the credential is
// checked), so the edge runs them; from `resolve` on, stages see only the CallContext. The edge writes
// whatever Outcome comes back.

import { isGoverned, publishAnswer } from './answer-event.js';
import { channels } from './events.js';
import type { CallContext } from './context.js';
import type { Outcome } from './outcome.js';
import { compose, type Next, type Stage, type StageName } from './stage.js';

/** The stages that run on a CallContext, in order. */
export const CALL_STAGES = ['state', 'resolve', 'access', 'requestState', 'pin', 'arguments', 'egress', 'rateLimit', 'budget', 'breaker', 'approval', 'idempotency', 'output', 'upstream'] as const satisfies readonly StageName[];

export type CallStages = Record<(typeof CALL_STAGES)[number], Stage>;

export type Pipeline = (ctx: CallContext) => Promise<Outcome>;

/**
 * The pipeline for one configuration. `output` wraps what `upstream` answers, so it sits before it in the
 * chain; it checks the answer on its way back.
 */
export function buildPipeline(stages: CallStages): Pipeline {
  const chain = CALL_STAGES.map((name) => stages[name]);
  const upstream = chain.pop()!;
  const end: Next = (ctx) => upstream.run(ctx, () => Promise.reject(new Error('nothing comes after the upstream stage')));
  const run = compose(chain, end);
  // A governed call's final answer is published (the audit subscribes) and leaves once that work is done.
  // Only then: a call nobody waits on (no audit, or not a tools/call) keeps the chain's own promise.
  return (ctx) => (isGoverned(ctx) && channels.answer.hasSubscribers ? run(ctx).then((outcome) => publishAnswer(outcome, ctx)) : run(ctx));
}
