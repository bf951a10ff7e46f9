// The output stage, for tools/call: the final result's `structuredContent` against the tool's
// outputSchema (tools.mdx §Output Schema: servers MUST conform, clients SHOULD validate), per
// `tools.outputValidation`: `warn` logs, `enforce` replaces the result with an `invalid_output` refusal.
// The answer is caught on its way out whatever its shape (pipeline/final-answer.ts); relayed bytes stay as
// they are unless a result must be replaced.
// A call made as a 2025-11-25 task (`params.task`, where tasks pass: the legacy pass-through, perSession
// children) is answered with a CreateTaskResult, and the tool's result comes later through tasks/result,
// which no stage reads (basic/utilities/tasks.mdx §Retrieving Task Results): that result cannot be checked.
// Under `enforce` the arguments stage refused such a call before anything was spent or sent
// (arguments-stage.ts); under `warn` it runs, its CreateTaskResult is not judged, and the log says so, also
// for a tool Gatehouse has no definition of (a task-only tool on the pass-through), which may have one.

import type { Logger } from '../log/logger.js';
import { publishRefused } from '../pipeline/events.js';
import { interceptFinal } from '../pipeline/final-answer.js';
import type { Stage } from '../pipeline/stage.js';
import type { CallContext } from '../pipeline/context.js';
import type { JsonRpcRequest } from '../protocol/jsonrpc.js';
import { structuredOutputOf } from '../protocol/era-shapes.js';
import { invalidOutput, type ArgumentSchemas } from './argument-schemas.js';

export type OutputValidation = 'enforce' | 'warn' | 'off';

export function compileOutputStage(mode: OutputValidation, schemas: ArgumentSchemas, log: Logger): Stage {
  return {
    name: 'output',
    // Also a task call to a tool Gatehouse has no definition of (a task-only tool on the pass-through, whose
    // routes come from lists that leave those out): it may have an outputSchema, and under `warn` (enforce
    // refused it in the arguments stage) the log must say its output goes unchecked.
    applies: (ctx) => mode !== 'off' && ctx.method === 'tools/call' && ctx.route !== undefined && (ctx.route.outputSchema !== undefined || (!ctx.route.listed && isTask(ctx))),
    async run(ctx, next) {
      const route = ctx.route!;
      if (isTask(ctx)) {
        log.warn('the output of a tool called as a task is not checked', { tool: route.publicName, upstream: route.upstream, callId: ctx.callId });
        return next(ctx);
      }
      return interceptFinal(await next(ctx), ctx, async ({ response, refusal }) => {
        const result = response.result;
        if (refusal !== undefined || !result || result.isError === true || result.resultType === 'input_required') return undefined;
        // For a 2025-11-25 client a structured output that is no object travels in `_meta` (era-shapes.ts).
        const structured = structuredOutputOf(result, ctx.era === 'legacy', route.outputSchema);
        const problems = schemas.checkOutput(route.publicName, route.outputSchema, structured);
        if (!problems) return undefined;
        log.warn('tool output does not match its outputSchema', { tool: route.publicName, upstream: route.upstream, problems, enforced: mode === 'enforce', callId: ctx.callId });
        if (mode !== 'enforce') return undefined;
        const replacement = invalidOutput(route.publicName, problems);
        publishRefused(ctx, 'output', replacement);
        return { refusal: replacement, stage: 'output' };
      });
    },
  };
}

/** A call made as a 2025-11-25 task (`params.task`). */
function isTask(ctx: CallContext): boolean {
  const params = (ctx.message as JsonRpcRequest).params;
  return params !== undefined && Object.hasOwn(params, 'task');
}
