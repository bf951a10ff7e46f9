// What a legacy client is told of 2025-11-25 core tasks while the audit refuses every task-augmented
// tools/call (-32601 task_unaudited, policy/arguments-stage.ts). Where the client has the upstream session to
// itself (the legacy pass-through, a `perSession` child) the server's initialize result and tools/list reach
// it as the server wrote them: `tasks.requests.tools.call`, and tools whose `execution.taskSupport` is
// "required". A client that believed them would make task calls that are then refused, and could never call
// a task-only tool at all: as a task Gatehouse refuses it, plainly the server must (basic/utilities/tasks.mdx
// §Tool-Level Negotiation). So those two answers say what will be served: no tool-call tasks in the
// capabilities, no task-only tool in the list (as the modern-client bridge lists them, era-shapes.ts
// withoutTaskOnlyTools). Only these two: initialize comes once per session and a list seldom, while
// tools/call, the hot path, keeps its bytes untouched. Answers with nothing to take out go on as they came.
// The paths that hold the session themselves (the bridges, the catalog) already offer no tasks: the same
// look there finds nothing to change.

import { interceptFinal, type FinalVerdict } from '../pipeline/final-answer.js';
import type { CallContext } from '../pipeline/context.js';
import type { Outcome } from '../pipeline/outcome.js';
import type { CallHandler } from '../pipeline/ports.js';
import type { JsonRpcResponse } from '../protocol/jsonrpc.js';
import { withoutTaskOnlyTools, withoutToolCallTasks } from '../protocol/era-shapes.js';

type Handler = CallHandler & { readonly name: string };

/** `upstream` with the tool-call tasks it would advertise to legacy clients taken out of its answers. */
export function withoutToolTaskOffers(upstream: Handler): Handler {
  return {
    name: upstream.name,
    handle(ctx) {
      // Core tasks are of the legacy era: a modern client is told of no such thing.
      if (ctx.era !== 'legacy' || ctx.kind !== 'request' || (ctx.method !== 'initialize' && ctx.method !== 'tools/list')) return upstream.handle(ctx);
      return upstream.handle(ctx).then((outcome) => offered(outcome, ctx));
    },
    close: () => upstream.close(),
  };
}

async function offered(outcome: Outcome, ctx: CallContext): Promise<Outcome> {
  const method = ctx.method;
  const out = await interceptFinal(outcome, ctx, async ({ response }): Promise<FinalVerdict> => {
    const result = response.result;
    if (result === undefined) return undefined;
    const changed = method === 'initialize' ? withoutToolCallTasks(result) : taskOnlyLeftOut(result);
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

/** The list without the tools callable only as tasks; undefined when it has none. */
function taskOnlyLeftOut(result: Record<string, unknown>): Record<string, unknown> | undefined {
  const { result: callable, taskOnly } = withoutTaskOnlyTools(result);
  return taskOnly.length > 0 ? callable : undefined;
}
