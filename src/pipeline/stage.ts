// The shape every stage has: it looks at the call and either answers it (a refusal, or an answer of its
// own) or hands it on. Stages never write HTTP and never know which stages come after them.

import type { Refusal } from '../errors.js';
import type { CallContext } from './context.js';
import { channels, publishRefused, type StagePassedEvent } from './events.js';
import type { Outcome } from './outcome.js';

/** Every stage, in the order the pipeline runs them (see order.ts, the one place that fixes it). */
export type StageName = 'admission' | 'auth' | 'state' | 'resolve' | 'access' | 'requestState' | 'pin' | 'arguments' | 'egress' | 'rateLimit' | 'budget' | 'breaker' | 'approval' | 'idempotency' | 'upstream' | 'output';

export type Next = (ctx: CallContext) => Promise<Outcome>;

export interface Stage {
  readonly name: StageName;
  /** Answers the call, or returns `next(ctx)` (possibly after looking at what comes back). */
  run(ctx: CallContext, next: Next): Promise<Outcome>;
  /** Which calls the stage looks at; others pass by without entering it. */
  applies?(ctx: CallContext): boolean;
}

/**
 * Chains the stages once per configuration, never per request (Caddy's compiled route list). A stage that
 * hands the call on is published as having passed it, only while someone listens (tracing).
 */
export function compose(stages: readonly Stage[], last: Next): Next {
  let next = last;
  for (let i = stages.length - 1; i >= 0; i--) {
    const stage = stages[i]!;
    const after = next;
    const passed: Next = (ctx) => {
      if (channels.passed.hasSubscribers) channels.passed.publish({ callId: ctx.callId, edge: ctx.edge, stage: stage.name } satisfies StagePassedEvent);
      return after(ctx);
    };
    const run = (ctx: CallContext): Promise<Outcome> => stage.run(ctx, channels.passed.hasSubscribers ? passed : after);
    next = stage.applies ? (ctx) => (stage.applies!(ctx) ? run(ctx) : after(ctx)) : run;
  }
  return next;
}

/** A stage's refusal: tagged with the stage and published, so logs and metrics say who refused and why. */
export function refuseAt(stage: StageName, ctx: { callId: string; edge: object }, refusal: Refusal): Outcome {
  publishRefused(ctx, stage, refusal);
  return { kind: 'refused', refusal, stage };
}
