// Publishes a governed call's final answer on `gatehouse:call:answer` before it leaves, and holds it until
// every subscriber's work is done (the audit record written, for one). Work that fails means the answer
// cannot be vouched for: the client gets GW_ERR_STATE_UNAVAILABLE instead, never an unrecorded answer.

import { failure, GatewayError } from '../errors.js';
import type { CallContext } from './context.js';
import { channels, publishRefused, type CallAnswerEvent } from './events.js';
import { interceptFinal, refusalAlreadyPublished, type FinalAnswer, type FinalVerdict } from './final-answer.js';
import type { Outcome } from './outcome.js';

/** tools/call is the governed call: the one that runs something on the client's behalf. */
export function isGoverned(ctx: CallContext): boolean {
  return ctx.method === 'tools/call' && ctx.kind === 'request';
}

export function publishAnswer(outcome: Outcome, ctx: CallContext): Promise<Outcome> | Outcome {
  if (!isGoverned(ctx) || !channels.answer.hasSubscribers) return outcome;
  const stage = outcome.kind === 'refused' ? outcome.stage : undefined;
  return interceptFinal(outcome, ctx, async (answer: FinalAnswer): Promise<FinalVerdict> => {
    const work: Array<Promise<unknown>> = [];
    const meta: Record<string, unknown> = {};
    channels.answer.publish({
      callId: ctx.callId,
      edge: ctx.edge,
      ctx,
      answer,
      ...(stage !== undefined ? { stage } : {}),
      waitFor: (w) => void work.push(w),
      addMeta: (key, value) => void (meta[key] = value),
    } satisfies CallAnswerEvent);
    try {
      // Usually one piece of work (the audit append): awaited as it is, without Promise.all's promise and closures.
      if (work.length === 1) await work[0];
      else if (work.length > 1) await Promise.all(work);
    } catch (err) {
      const refusal = failure(new GatewayError('GW_ERR_STATE_UNAVAILABLE', 'Gatehouse could not record this call, so its answer is withheld; retry later', undefined, { cause: err }));
      // A refusal like a stage's (stage.ts refuseAt): published, so the metrics' refusals and the span count
      // it; but not over a refusal a stage published already, which the call is counted by.
      if (!refusalAlreadyPublished(outcome, answer)) publishRefused(ctx, 'audit', refusal);
      return { refusal, stage: 'audit' };
    }
    return withMeta(answer, meta);
  });
}

function withMeta(answer: FinalAnswer, meta: Record<string, unknown>): FinalVerdict {
  if (Object.keys(meta).length === 0) return undefined;
  if (answer.refusal?.kind === 'tool') return { refusal: { ...answer.refusal, meta: { ...answer.refusal.meta, ...meta } } };
  if (answer.refusal !== undefined || answer.response.result === undefined) return undefined;
  // Said as entries, not as a new response: a relayed answer then gets them inserted into its bytes.
  return { meta };
}
