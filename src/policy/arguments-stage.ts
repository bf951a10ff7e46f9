// The arguments stage, for tools/call: the client's `Mcp-Param-*` headers against the body (a transport
// refusal, 400 / -32020), then the arguments against the tool's inputSchema (a tool result the model can
// act on, `invalid_arguments`). Both before anything reaches the upstream, on every path.
// A call made as a 2025-11-25 task (`params.task`) is refused here too, -32601, where it can never run:
// - on a path that carries no core tasks (the era bridges, stdio `shared`/`single`, the catalog:
//   protocol/core-tasks.ts), which the upstream adapter would refuse anyway (it still does, for the
//   requests that reach it);
// - under tools.outputValidation `enforce`, to a tool with an outputSchema: its result would come through
//   tasks/result, which no stage reads, so the output check could not follow it (output-stage.ts). So too
//   to a tool Gatehouse has no definition of (a route not `listed`, passed through by name), since it cannot
//   tell that the tool declares no outputSchema. Every tool a legacy server offers only as a task is such a
//   tool: Gatehouse reads the upstream's list through the modern-client bridge, which leaves them out
//   (era-shapes.ts withoutTaskOnlyTools), and until 4 December one with an outputSchema ran as a task
//   under `enforce`, its result fetched unchecked;
// - under the audit (audit.enabled): the record of a tools/call is written with its answer, which for a task
//   is the CreateTaskResult; the tool's result comes later through tasks/result, a method that is no tool
//   call and is not recorded. A governed gateway promises a record of every result it lets through, so the
//   task is refused rather than let through unrecorded (with the audit off, tasks pass where the path
//   carries them).
// Here, not where the upstream or the output stage would refuse it, so that nothing is spent (rate limits,
// budgets), asked (approvals) or kept (an idempotency key's answer) for a call that never runs; and after
// the access stage, so a tool hidden from the caller stays an unknown tool to them.

import type { CallContext, Route } from '../pipeline/context.js';
import type { Outcome } from '../pipeline/outcome.js';
import { refuseAt, type Next, type Stage } from '../pipeline/stage.js';
import { ErrorCode, type JsonRpcRequest } from '../protocol/jsonrpc.js';
import { checkParamHeaders } from '../protocol/param-headers.js';
import { coreTaskRefusal } from '../protocol/core-tasks.js';
import { invalidArguments, isUncheckable, schemaUnsupported, type ArgumentSchemas } from './argument-schemas.js';

export interface ArgumentsStageDeps {
  schemas: ArgumentSchemas;
  /** tools.uncheckableSchemas: a call whose inputSchema cannot be checked is refused, or passed unchecked. */
  uncheckable: 'refuse' | 'allow';
  /** The route again from a fresh list: a tool whose headers do not match may have just changed. */
  refreshRoute(route: Route, capabilities: Record<string, unknown>): Promise<Route | undefined>;
  /**
   * tools.pinning: under `enforce` a fresh route whose definition changed is not taken here, since the pin
   * stage (before this one) judged the old definition: the client is told to list again, and its retry
   * meets the pin stage with the new one.
   */
  pinning: 'off' | 'warn' | 'enforce';
  /** tools.outputValidation: under `enforce` a tool with an outputSchema is not called as a task. */
  outputValidation: 'off' | 'warn' | 'enforce';
  /** Whether the path serving this call refuses core tasks (Upstream.refusesCoreTasks). */
  refusesCoreTasks(ctx: CallContext): Promise<boolean>;
  /** audit.enabled: every tool call's result is recorded, so no call is made as a task (see the header). */
  auditing: boolean;
}

export function compileArgumentsStage(deps: ArgumentsStageDeps): Stage {
  return {
    name: 'arguments',
    applies: (ctx) => ctx.method === 'tools/call' && ctx.route !== undefined,
    // Not async: a call without Mcp-Param-* headers to check (nor params.task) is handed on without a
    // promise of its own.
    run(ctx, next) {
      if (Object.hasOwn((ctx.message as JsonRpcRequest).params!, 'task')) return asTask(ctx, next);
      return checked(ctx, next);
    },
  };

  /** A task-augmented call: refused first where its path carries no tasks at all, then under the audit. */
  async function asTask(ctx: CallContext, next: Next): Promise<Outcome> {
    if (await deps.refusesCoreTasks(ctx)) return refuseAt('arguments', ctx, coreTaskRefusal(ctx.message as JsonRpcRequest)!);
    if (deps.auditing) {
      // tasks.mdx §Tool-Level Negotiation: a task the server does not support for this tool is -32601.
      return refuseAt('arguments', ctx, {
        kind: 'protocol',
        code: 'task_unaudited',
        rpcCode: ErrorCode.MethodNotFound,
        message: `Tool "${ctx.route!.publicName}" is not called as a task here: Gatehouse records every tool call's result in its audit (audit.enabled), and a task's result comes through tasks/result, which is not recorded. Call it without params.task.`,
      });
    }
    return checked(ctx, next);
  }

  /** The checks every call meets (a task's output under `enforce`, the headers, the arguments). */
  function checked(ctx: CallContext, next: Next): Promise<Outcome> {
    const route = ctx.route!;
    if (deps.outputValidation === 'enforce' && (route.outputSchema !== undefined || !route.listed) && Object.hasOwn((ctx.message as JsonRpcRequest).params!, 'task')) {
      const why = route.listed ? 'it declares an outputSchema, which Gatehouse checks' : 'Gatehouse has no definition of it, so cannot tell that it declares no outputSchema, which Gatehouse would check';
      // tasks.mdx §Tool-Level Negotiation: a task the server does not support for this tool is -32601.
      return Promise.resolve(
        refuseAt('arguments', ctx, {
          kind: 'protocol',
          code: 'task_output_unchecked',
          rpcCode: ErrorCode.MethodNotFound,
          message: `Tool "${route.publicName}" is not called as a task here: ${why} (tools.outputValidation: enforce), and a task's result comes through tasks/result, which it cannot check. Call it without params.task.`,
        }),
      );
    }
    // streamable-http.mdx §Server Behavior for Custom Headers: Gatehouse processes the body, so it MUST
    // check the Mcp-Param-* headers the tool's x-mcp-header annotations imply (2026-07-28 requests only).
    if (ctx.era === 'modern' && route.params.length > 0) return withParamHeaders(ctx, next);
    return Promise.resolve(checkArguments(ctx, next));
  }

  async function withParamHeaders(ctx: CallContext, next: Next): Promise<Outcome> {
    let route = ctx.route!;
    const args = (ctx.message as JsonRpcRequest).params!.arguments;
    let problem = checkParamHeaders(route.params, args, ctx.headers);
    if (problem !== undefined) {
      const fresh = await deps.refreshRoute(route, ctx.clientCapabilities).catch(() => undefined);
      // Only the same tool: the stages before judged this ref (access) and this definition (pinning). A name
      // that now belongs to another tool, or under `enforce` a definition that changed, is the header
      // mismatch it was, and the client's next try, after a list, is judged afresh.
      const same = fresh !== undefined && fresh.ref === route.ref && (deps.pinning !== 'enforce' || fresh.definitionSha256 === route.definitionSha256);
      if (same) {
        route = ctx.route = fresh;
        problem = checkParamHeaders(route.params, args, ctx.headers);
      }
    }
    if (problem !== undefined) {
      return refuseAt('arguments', ctx, { kind: 'transport', code: 'param_header', status: 400, rpcCode: ErrorCode.HeaderMismatch, message: `Header mismatch: ${problem}` });
    }
    return checkArguments(ctx, next);
  }

  /** tools.mdx §Error Handling: input validation failures are tool results, so a model can correct itself. */
  function checkArguments(ctx: CallContext, next: Next): Promise<Outcome> | Outcome {
    const route = ctx.route!;
    const problems = deps.schemas.check(route.publicName, route.inputSchema, (ctx.message as JsonRpcRequest).params!.arguments);
    if (problems === undefined) return next(ctx);
    if (!isUncheckable(problems)) return refuseAt('arguments', ctx, invalidArguments(route.publicName, problems));
    return deps.uncheckable === 'allow' ? next(ctx) : refuseAt('arguments', ctx, schemaUnsupported(route.publicName, problems));
  }
}
