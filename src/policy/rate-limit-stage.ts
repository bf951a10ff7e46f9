// The rate-limit stage, for tools/call: the first non-ip entry of policy.rateLimits that selects the call
// takes a token from its bucket in the store; an empty bucket refuses the call with `rate_limited`, a tool
// result with `_meta["dev.gatehouse/retry_after"]`. A store that cannot answer fails the call closed.

import { failure, GatewayError } from '../errors.js';
import { waitedOnAnswer } from '../pipeline/events.js';
import { refuseAt, type Stage } from '../pipeline/stage.js';
import { bucketKey, rateLimited, type CompiledLimit, type TakeToken } from './rate-limits.js';
import { firstMatch } from './selector.js';

export function compileRateLimitStage(limits: readonly CompiledLimit[], take: TakeToken): Stage {
  return {
    name: 'rateLimit',
    applies: (ctx) => limits.length > 0 && ctx.method === 'tools/call' && ctx.route !== undefined,
    async run(ctx, next) {
      const route = ctx.route!;
      const limit = firstMatch(limits, ctx.principal, route);
      if (limit === undefined) return next(ctx);
      let taken;
      try {
        // A token the store takes at once (the usual case) is not awaited: no promise, no microtask turn.
        const answer = waitedOnAnswer(ctx, 'rateLimit', 'store.take', take(bucketKey(limit, ctx.principal, route, ctx.clientAddress), limit.bucket));
        taken = answer instanceof Promise ? await answer : answer;
      } catch (err) {
        return refuseAt('rateLimit', ctx, failure(new GatewayError('GW_ERR_STATE_UNAVAILABLE', 'The rate limit of this call cannot be checked now, so the call is not run; retry later', undefined, { cause: err })));
      }
      return taken.allowed ? next(ctx) : refuseAt('rateLimit', ctx, rateLimited(limit, route, taken.retryAfterMs));
    },
  };
}
