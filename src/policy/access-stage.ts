// The access stage: a caller may call only what its key and the access rules let it see. A hidden tool,
// prompt or resource is answered exactly like one that does not exist, after the same work (the catalog
// lists again), so neither the words nor the timing tell it exists. A resources/subscribe is judged as a
// read: a resource the caller may use only after a step-up is that 403; a hidden one goes on to the catalog
// (which serves every upstream whose resources rules govern: AccessPolicy.perCaller), and is answered there
// as a URI no member holds is, after the same list (catalog.ts listen).

import type { CallContext, Route } from '../pipeline/context.js';
import type { Refusal } from '../errors.js';
import type { Outcome } from '../pipeline/outcome.js';
import { refuseAt, type Next, type Stage } from '../pipeline/stage.js';
import { ErrorCode, type JsonRpcRequest } from '../protocol/jsonrpc.js';
import { describeValue } from '../protocol/describe.js';
import { resourceNotFoundMessage } from '../protocol/resource-not-found.js';
import type { AccessPolicy } from './access.js';

export interface AccessStageDeps {
  policy: AccessPolicy;
  /** Lists the kind again, as resolving an unknown name (or a URI nobody listed) does. */
  relist(kind: 'tools' | 'prompts' | 'resources' | 'resources/templates', capabilities: Record<string, unknown>): Promise<void>;
  /** The unknown-item answer's words, shared with the resolve stage. */
  unknownItemMessage(kind: 'tools' | 'prompts', name: string): string;
  /** The 403 that asks the caller to come back with these scopes (a rule's `onMissingScopes: challenge`). */
  insufficientScope(scopes: readonly string[], message: string): Refusal;
}

/** The resource URI a call reads or completes, when it names one. */
function resourceUri(ctx: CallContext): string | undefined {
  const params = (ctx.message as JsonRpcRequest).params;
  if (ctx.method === 'resources/read' || ctx.method === 'resources/subscribe') return params!.uri as string;
  if (ctx.method === 'completion/complete') {
    const ref = params!.ref as { type: string; uri?: string };
    return ref.type === 'ref/resource' ? ref.uri : undefined;
  }
  return undefined;
}

/** The methods this stage judges, and so may answer with a step-up (403 insufficient_scope). */
export const STEP_UP_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read', 'resources/subscribe', 'completion/complete']);

export function compileAccessStage(deps: AccessStageDeps): Stage {
  return {
    name: 'access',
    applies: (ctx) => ctx.route !== undefined || ctx.method === 'resources/read' || ctx.method === 'completion/complete' || ctx.method === 'resources/subscribe',
    // Not async: an allowed call, the usual one, is handed on without a promise of its own.
    run(ctx, next) {
      const route = ctx.route;
      if (route !== undefined) {
        const decision = deps.policy.decide(ctx.principal, route.kind, route.ref);
        if (decision === true) return admitted(ctx, next);
        if (decision !== false) return Promise.resolve(stepUp(ctx, decision.scopes, `${route.kind === 'tools' ? 'Tool' : 'Prompt'} ${describeValue(route.publicName)}`));
        return hidden(ctx, route);
      }
      const uri = resourceUri(ctx);
      if (uri === undefined) return admitted(ctx, next);
      const decision = deps.policy.decide(ctx.principal, 'resources', uri);
      if (decision === true) return admitted(ctx, next);
      if (decision !== false) return Promise.resolve(stepUp(ctx, decision.scopes, `Resource ${describeValue(uri)}`));
      // Refused here, a hidden subscribe would skip the listen a missing one opens on the members.
      if (ctx.method === 'resources/subscribe') return admitted(ctx, next);
      return hiddenResource(ctx, uri);
    },
  };

  /** Passed: an edge holding its answer for this verdict (CallContext.admitted) hears it first. */
  function admitted(ctx: CallContext, next: Next): Promise<Outcome> {
    ctx.admitted?.();
    return next(ctx);
  }

  /**
   * server/resources.mdx §Error Handling: a resource the caller may not see is one that is not found, after
   * the list a URI nobody listed makes the catalog read (catalog.ts routeByUri: templates for a completion's
   * URI template, resources otherwise). Answered at once, it told itself from a missing one by its time.
   */
  async function hiddenResource(ctx: CallContext, uri: string): Promise<Outcome> {
    const kind = ctx.method === 'completion/complete' && uri.includes('{') ? 'resources/templates' : 'resources';
    await deps.relist(kind, ctx.clientCapabilities).catch(() => {});
    return refuseAt('access', ctx, { kind: 'protocol', code: 'resource_not_found', rpcCode: ErrorCode.InvalidParams, message: resourceNotFoundMessage(uri) });
  }

  /** An item the caller sees but may use only with more scopes: a 403 to step up with. */
  function stepUp(ctx: CallContext, scopes: readonly string[], what: string): Outcome {
    return refuseAt('access', ctx, deps.insufficientScope(scopes, `Insufficient scope: ${what} needs ${scopes.join(' ')}`));
  }

  /** A hidden tool or prompt is an unknown one, after the list is read again (it may have just appeared). */
  async function hidden(ctx: CallContext, route: Route): Promise<Outcome> {
    await deps.relist(route.kind, ctx.clientCapabilities).catch(() => {});
    return refuseAt('access', ctx, { kind: 'protocol', code: route.kind === 'tools' ? 'unknown_tool' : 'unknown_prompt', rpcCode: ErrorCode.InvalidParams, message: deps.unknownItemMessage(route.kind, route.publicName) });
  }
}
