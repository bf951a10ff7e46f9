// The resolve stage: which tool or prompt of which upstream a call names. Every tools/call and
// prompts/get learns its route here, whatever the path it takes after (pass-through, bridge, catalog,
// stdio), so the stages after it can check access, arguments and policy by ref. A name nobody lists gets
// tools.mdx §Error Handling's answer, -32602, except where one upstream is served by pass-through and no
// access rule governs the kind: there the name keeps its ref (`upstream/name`) but no schemas, and the
// upstream answers it as it always has. Where rules govern it, Gatehouse answers every unlisted name itself,
// so a hidden item and a missing one get the same words on every path.

import { asGatewayError, failure } from '../errors.js';
import type { CallContext } from '../pipeline/context.js';
import type { Outcome } from '../pipeline/outcome.js';
import { refuseAt, type Next, type Stage } from '../pipeline/stage.js';
import { ErrorCode, type JsonRpcRequest } from '../protocol/jsonrpc.js';
import { unknownItemMessage, type Catalog } from './catalog.js';
import type { Logger } from '../log/logger.js';

/** The kind and public name a call names, for the calls that name a tool or prompt. */
export function namedItem(ctx: CallContext): { kind: 'tools' | 'prompts'; name: string } | undefined {
  if (ctx.kind !== 'request') return undefined;
  const params = (ctx.message as JsonRpcRequest).params;
  switch (ctx.method) {
    case 'tools/call':
      return { kind: 'tools', name: params!.name as string };
    case 'prompts/get':
      return { kind: 'prompts', name: params!.name as string };
    case 'completion/complete': {
      // The front door checked the shapes: a prompt reference carries a string name.
      const ref = params!.ref as { type: string; name?: string };
      return ref.type === 'ref/prompt' ? { kind: 'prompts', name: ref.name! } : undefined;
    }
    default:
      return undefined;
  }
}

export interface ResolveStageDeps {
  catalog: Catalog;
  /** The single upstream served by pass-through, when it is and no access rule governs `kind` (then unlisted names pass on unchecked). */
  passThrough(kind: 'tools' | 'prompts'): string | undefined;
  log: Logger;
}

export function compileResolveStage({ catalog, passThrough, log }: ResolveStageDeps): Stage {
  return {
    name: 'resolve',
    applies: (ctx) => ctx.method === 'tools/call' || ctx.method === 'prompts/get' || ctx.method === 'completion/complete',
    // Not async: a name the last list knows, the usual call, is routed and handed on at once.
    run(ctx, next) {
      const item = namedItem(ctx);
      if (item === undefined) return next(ctx);
      const known = catalog.known(item.kind, item.name);
      if (known === undefined) return resolved(ctx, next, item);
      ctx.route = known;
      return next(ctx);
    },
  };

  /** A name the last list does not know: the catalog may list again before it is judged. */
  async function resolved(ctx: CallContext, next: Next, item: { kind: 'tools' | 'prompts'; name: string }): Promise<Outcome> {
    let route;
    try {
      route = await catalog.resolve(item.kind, item.name, ctx.clientCapabilities);
    } catch (err) {
      return refuseAt('resolve', ctx, failure(asGatewayError(err, 'GW_ERR_UPSTREAM_UNREACHABLE', log, { callId: ctx.callId })));
    }
    if (route === undefined) {
      const upstream = passThrough(item.kind);
      if (upstream === undefined) return refuseAt('resolve', ctx, { kind: 'protocol', code: item.kind === 'tools' ? 'unknown_tool' : 'unknown_prompt', rpcCode: ErrorCode.InvalidParams, message: unknownItemMessage(item.kind, item.name) });
      route = { kind: item.kind, ref: `${upstream}/${item.name}`, publicName: item.name, original: item.name, upstream, listed: false, params: [] };
    }
    ctx.route = route;
    return next(ctx);
  }
}
