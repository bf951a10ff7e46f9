// The requestState stage, for modern calls that may ask for input (tools/call, prompts/get, resources/read;
// mrtr.mdx §Supported Requests): every `requestState` an answer carries back to the client is sealed to this
// call and caller (auth/request-state-seal.ts), and a retry's is opened before anything after this stage,
// the upstream included, sees it. A state that is not this gateway's, belongs to another caller or another
// call, was altered, or has expired is refused with -32602 (mrtr.mdx §Server Requirements 4: MUST reject
// state that fails verification).
//
// Whatever adapter answers (the byte pass-through, the catalog, the era bridges, an approval's question),
// the client only ever holds sealed state. A relayed answer is parsed only when its bytes say
// `input_required`: on the pass-through the usual answer passes untouched.
//
// A legacy request (2025-11-25 and before) carrying a `requestState` is refused the same way: those revisions
// have none, and Gatehouse gives a legacy client none (its legacy→modern bridge runs the input rounds itself),
// so it cannot be one Gatehouse sealed. The seal wraps the upstream's string in the clear: until 4 December a
// legacy client that had seen another caller's sealed state sent the string inside it in its own params, the
// bridge passed it on, and the upstream, which sees only Gatehouse, ran the other caller's continuation.

import { createHash } from 'node:crypto';
import type { Refusal } from '../errors.js';
import type { CallContext } from '../pipeline/context.js';
import { interceptFinal, type FinalVerdict } from '../pipeline/final-answer.js';
import { principalKey } from '../pipeline/principal.js';
import { refuseAt, type Stage } from '../pipeline/stage.js';
import { canonicalJson } from '../protocol/canonical-json.js';
import { ErrorCode, type JsonRpcMessage, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import type { RequestStateSeal, StateBinding } from './request-state-seal.js';

/** The requests an InputRequiredResult may answer (mrtr.mdx §Supported Requests). */
const CONTINUABLE = new Set(['tools/call', 'prompts/get', 'resources/read']);

const REASONS = {
  not_sealed: 'requestState was not issued by this gateway',
  invalid: 'requestState does not belong to this caller and request, or was altered',
  expired: 'requestState has expired',
} as const;

export function compileRequestStateStage(seal: RequestStateSeal): Stage {
  return {
    name: 'requestState',
    // A legacy call enters only when it carries a requestState, to be refused: the usual one passes by.
    applies: (ctx) => ctx.kind === 'request' && CONTINUABLE.has(ctx.method!) && (ctx.era === 'modern' || (ctx.message as JsonRpcRequest).params?.requestState !== undefined),
    // Not async: the usual call (no state to open) costs one `then`, no frame of its own.
    run(ctx, next) {
      const request = ctx.message as JsonRpcRequest;
      if (ctx.era !== 'modern') return Promise.resolve(refuseAt('requestState', ctx, invalidState(LEGACY_STATE, 'not_sealed')));
      // Worked out only for a retry or an answer that asks for input: most calls are neither.
      let bound: StateBinding | undefined;
      const binding = (): StateBinding => (bound ??= bindingOf(ctx, request));
      const given = request.params?.requestState;
      // The front door has checked its type (protocol/param-shapes.ts).
      if (typeof given === 'string') {
        const opened = seal.open(given, binding());
        if (!opened.ok) return Promise.resolve(refuseAt('requestState', ctx, invalidState(REASONS[opened.reason], opened.reason)));
        replaceMessage(ctx, { ...request, params: { ...request.params, requestState: opened.state } });
      }
      const sealAnswer = ({ response }: { response: JsonRpcResponse }): Promise<FinalVerdict> => {
        const result = response.result;
        if (result?.resultType !== 'input_required' || typeof result.requestState !== 'string') return NOTHING;
        return Promise.resolve({ response: { ...response, result: { ...result, requestState: seal.seal(result.requestState, binding()) } } });
      };
      return next(ctx).then((outcome) => interceptFinal(outcome, ctx, sealAnswer, MARKED));
    },
  };
}

/** What a legacy client is told: its revision has no requestState, and Gatehouse never gave it one. */
const LEGACY_STATE = 'requestState is not part of this protocol revision, and Gatehouse issued none to this client';

/** mrtr.mdx §Server Requirements 4: state that fails verification is rejected (-32602), never passed on. */
function invalidState(why: string, reason: 'not_sealed' | 'invalid' | 'expired'): Refusal {
  return {
    kind: 'protocol',
    code: 'request_state_invalid',
    rpcCode: ErrorCode.InvalidParams,
    message: `${why}; send the request again without requestState and inputResponses`,
    data: { reason },
  };
}

const NOTHING: Promise<FinalVerdict> = Promise.resolve(undefined);
/** Only an answer that asks for input can carry a requestState. */
const MARKED = { marker: 'input_required' } as const;

/** The call a requestState belongs to (mrtr.mdx §Server Requirements 5: principal, method, salient parameters). */
function bindingOf(ctx: CallContext, request: JsonRpcRequest): StateBinding {
  const params = request.params ?? {};
  const target = ctx.method === 'resources/read' ? params.uri : params.name;
  return {
    caller: principalKey(ctx.principal),
    method: ctx.method!,
    target: typeof target === 'string' ? target : '',
    arguments: params.arguments === undefined ? '' : createHash('sha256').update(canonicalJson(params.arguments)).digest('base64url'),
  };
}

/**
 * The one place a stage changes the client's message in place: the upstream must get its own requestState
 * back, and every stage before this one (the audit's, the budget's) must keep seeing the same context, so a
 * copy would not do. The bytes are written again to match.
 */
function replaceMessage(ctx: CallContext, message: JsonRpcMessage): void {
  const writable = ctx as { message?: JsonRpcMessage; body?: Buffer };
  writable.message = message;
  writable.body = Buffer.from(JSON.stringify(message));
}
