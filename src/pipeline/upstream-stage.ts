// The upstream stage: hands the call to the adapter of the configured upstream(s) and names what comes
// back. A refusal the adapter makes (an upstream failure, a session it does not know) is published as the
// upstream stage's; an adapter that throws is a bug, answered as a failure rather than a crash.

import { failure, GatewayError } from '../errors.js';
import { channels, publishRefused, publishUpstreamAnswer, publishUpstreamStart } from './events.js';
import { callTimedOut, type CallDeadlines } from './call-deadline.js';
import type { CallContext } from './context.js';
import type { Outcome } from './outcome.js';
import type { CallHandler } from './ports.js';
import type { Stage } from './stage.js';

/**
 * The longest the answer to `ctx` may take (an HTTP upstream's `timeouts.callMs`), given what came back;
 * undefined: no limit here (stdio upstreams bound their calls themselves).
 */
export type CallLimit = (ctx: CallContext, outcome: Outcome) => { upstream: string; ms: number; setting?: string } | undefined;

export function compileUpstreamStage(upstream: CallHandler & { readonly name: string }, log: { error(msg: string, fields?: Record<string, unknown>): void }, limits?: { limitOf: CallLimit; deadlines: CallDeadlines }): Stage {
  return {
    name: 'upstream',
    async run(ctx) {
      const started = performance.now();
      // Tracing starts its CLIENT span here and sets ctx.upstreamTrace, which the adapter sends.
      if (channels.upstreamStart.hasSubscribers) publishUpstreamStart(ctx, upstream.name);
      let outcome: Outcome;
      try {
        outcome = await upstream.handle(ctx);
      } catch (err) {
        log.error('an upstream adapter threw; answering with a failure', { err, callId: ctx.callId });
        outcome = { kind: 'refused', refusal: failure(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', 'The upstream call failed inside Gatehouse', upstream.name)) };
      }
      publishUpstreamAnswer(ctx, upstream.name, outcome.kind, (performance.now() - started) / 1000);
      if (outcome.kind === 'refused' && outcome.stage === undefined) {
        outcome.stage = 'upstream';
        publishRefused(ctx, 'upstream', outcome.refusal);
      } else if (limits !== undefined && (outcome.kind === 'stream' || (outcome.kind === 'relay' && !outcome.body.settled)) && ctx.kind === 'request' && ctx.httpMethod === 'POST' && ctx.method !== 'subscriptions/listen') {
        // (A relayed answer already complete, the usual JSON one, has nothing left to time.)
        // A listen may stay open for as long as its client wants; a request's answer may not.
        const limit = limits.limitOf(ctx, outcome);
        if (limit !== undefined) return limits.deadlines.bound(outcome, started + limit.ms, () => callTimedOut(limit.upstream, limit.ms, limit.setting));
      }
      return outcome;
    },
  };
}
