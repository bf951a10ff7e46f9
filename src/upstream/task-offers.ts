// What a legacy client is told of 2025-11-25 core tasks where Gatehouse refuses some task-augmented tools/call
// that would otherwise pass. Where the client has the upstream session to itself (the legacy pass-through, a
// `perSession` child) the server's initialize result and tools/list reach it as the server wrote them:
// `tasks.requests.tools.call`, and tools whose `execution.taskSupport` is "required". Three refusals make
// those untrue:
// - under the audit every task-augmented tools/call is refused (-32601 task_unaudited, arguments stage). A
//   client that believed the answers would make task calls that are then refused, and could never call a
//   task-only tool at all: as a task Gatehouse refuses it, plainly the server must (basic/utilities/tasks.mdx
//   §Tool-Level Negotiation). So both answers say what will be served: no tool-call tasks in the capabilities, no task-only tool in the
//   list (as the modern-client bridge lists them, era-shapes.ts withoutTaskOnlyTools, which also drops
//   `execution`, no 2026-07-28 field; here the other tools keep theirs);
// - under `tools.outputValidation: enforce` a task call to a tool that declares an outputSchema, or that
//   Gatehouse has no definition of, is refused (-32601 task_output_unchecked). Every task-only tool is one of
//   those (Gatehouse's own lists of a legacy upstream come through the modern-client bridge, which leaves
//   them out), so none can run, and tools/list leaves them out. A tool callable either way ("optional")
//   that declares an outputSchema is listed "forbidden": "optional" tells a client it MAY make the task call
//   that is then refused, and only a "forbidden" tool is answered -32601 (§Tool-Level Negotiation, rule
//   2.1). Those without an outputSchema still run as tasks, so the capabilities stay as the server declared;
// - where access rules govern tools (policy.rules naming tools) only a name Gatehouse's own lists show may be
//   called (catalog/resolve-stage.ts), and none shows a task-only tool: a call to one is -32602, an unknown
//   tool. The check made before a list passes through (catalog/single-upstream.ts, does a rule hide an item
//   from everyone?) never saw them either, so a rule that hid one did not hide it from the passed-through
//   list. tools/list leaves them out there too, which hides them whatever the rules say.
// And whatever the configuration, a task-only tool whose name is not one Gatehouse gives clients
// (`[A-Za-z0-9_-]`, at most 64 characters: catalog/public-names.ts) is left out: the same check never saw its
// name, which a list passed through cannot rewrite, and the catalog, which would, carries no core tasks.
// Only these two answers: initialize comes once per session and a list seldom, while tools/call, the hot
// path, keeps its bytes untouched. Answers with nothing to take out go on as they came. The paths that hold
// the session themselves (the bridges, the catalog) already offer no tasks: the same look there finds
// nothing to change.

import { interceptFinal, type FinalVerdict } from '../pipeline/final-answer.js';
import type { CallContext } from '../pipeline/context.js';
import type { Outcome } from '../pipeline/outcome.js';
import type { CallHandler } from '../pipeline/ports.js';
import type { JsonRpcResponse } from '../protocol/jsonrpc.js';
import { isObject, withoutToolCallTasks } from '../protocol/era-shapes.js';

type Handler = CallHandler & { readonly name: string };

/** Which of a legacy client's answers lose their tool-call task offers (see the header). */
export interface TaskOffers {
  /** The initialize answer loses `tasks.requests.tools` (under the audit). */
  capability: boolean;
  /** tools/list loses the tools callable only as tasks (under the audit, output validation `enforce`, or access rules on tools). */
  taskOnlyTools: boolean;
  /** tools/list shows a tool with an outputSchema as `taskSupport: "forbidden"` (output validation `enforce`). */
  checkedOutputNotTasks: boolean;
}

/** What of a configuration takes task offers out (see the header). */
export interface TaskOfferLimits {
  /** audit.enabled */
  auditing: boolean;
  /** tools.outputValidation */
  outputValidation: 'enforce' | 'warn' | 'off';
  /** Whether access rules name tools (AccessPolicy.governs('tools')). */
  accessGovernsTools: boolean;
}

/** Which offers a configuration takes out (a task-only tool with an unsafe name always is). */
export function taskOffersTakenOut(limits: TaskOfferLimits): TaskOffers {
  const checkedOutputNotTasks = limits.outputValidation === 'enforce';
  return { capability: limits.auditing, taskOnlyTools: limits.auditing || checkedOutputNotTasks || limits.accessGovernsTools, checkedOutputNotTasks };
}

/** A name Gatehouse gives clients unchanged (catalog/public-names.ts, which upstream/ does not import). */
const SAFE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** `upstream` with the tool-call tasks it would advertise to legacy clients taken out of its answers, as `out` says (legacy tools/list is always read). */
export function withoutToolTaskOffers(upstream: Handler, out: TaskOffers): Handler {
  return {
    name: upstream.name,
    handle(ctx) {
      // Core tasks are of the legacy era: a modern client is told of no such thing.
      if (ctx.era !== 'legacy' || ctx.kind !== 'request') return upstream.handle(ctx);
      if (ctx.method === 'initialize' ? !out.capability : ctx.method !== 'tools/list') return upstream.handle(ctx);
      return upstream.handle(ctx).then((outcome) => offered(outcome, ctx, out));
    },
    close: () => upstream.close(),
  };
}

async function offered(outcome: Outcome, ctx: CallContext, offers: TaskOffers): Promise<Outcome> {
  const method = ctx.method;
  const out = await interceptFinal(outcome, ctx, async ({ response }): Promise<FinalVerdict> => {
    const result = response.result;
    if (result === undefined) return undefined;
    const changed = method === 'initialize' ? withoutToolCallTasks(result) : toolsAsServed(result, offers);
    return changed === undefined ? undefined : { response: { ...response, result: changed } as JsonRpcResponse };
  });
  // A relayed JSON answer written again comes back as JSON without the upstream's headers: its
  // Mcp-Session-Id (an initialize's) and the rest go with it still, its length now the edge's to state.
  if (outcome.kind === 'relay' && out.kind === 'json') {
    const { 'content-length': _length, ...headers } = outcome.headers;
    return { ...out, headers: { ...headers, ...out.headers } };
  }
  return out;
}

/**
 * The list without the tools callable only as tasks (`taskOnlyTools`, else those with an unsafe name), and
 * (`checkedOutputNotTasks`) with those that declare an
 * outputSchema marked "forbidden"; undefined when nothing changed. The others keep their `execution`: under
 * `enforce` a tool callable either way and without an outputSchema still runs as a task.
 */
function toolsAsServed(result: Record<string, unknown>, offers: TaskOffers): Record<string, unknown> | undefined {
  if (!Array.isArray(result.tools)) return undefined;
  let changed = false;
  const tools: unknown[] = [];
  for (const tool of result.tools as unknown[]) {
    const support = isObject(tool) && isObject(tool.execution) ? tool.execution.taskSupport : undefined;
    const name = isObject(tool) ? tool.name : undefined;
    if (support === 'required' && (offers.taskOnlyTools || !(typeof name === 'string' && SAFE_NAME.test(name)))) {
      changed = true;
      continue;
    }
    if (support === 'optional' && offers.checkedOutputNotTasks && isObject(tool) && tool.outputSchema !== undefined) {
      changed = true;
      tools.push({ ...tool, execution: { ...(tool.execution as Record<string, unknown>), taskSupport: 'forbidden' } });
      continue;
    }
    tools.push(tool);
  }
  return changed ? { ...result, tools } : undefined;
}
