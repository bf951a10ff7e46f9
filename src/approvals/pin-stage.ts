// The pin stage, for tools/call (tools.pinning): the route's tool definition must be the pinned one. With
// `enforce` a changed tool is refused with `tool_changed` until a reviewer accepts the change; with `warn`
// the change is logged (once) and the call runs. A store that cannot answer fails an `enforce` call closed
// and lets a `warn` call run (warn never refuses).

import { failure, GatewayError } from '../errors.js';
import { waitedOn } from '../pipeline/events.js';
import type { Logger } from '../log/logger.js';
import type { CallContext } from '../pipeline/context.js';
import type { Outcome } from '../pipeline/outcome.js';
import { refuseAt, type Next, type Stage } from '../pipeline/stage.js';
import type { PinBook } from './pins.js';

export function compilePinStage(mode: 'off' | 'warn' | 'enforce', pins: PinBook, log: Logger): Stage {
  /** Changes this process has warned about: a `warn` call to a tool known to have changed skips the store. */
  const warned = new Set<string>();
  return {
    name: 'pin',
    applies: (ctx) => mode !== 'off' && ctx.method === 'tools/call' && ctx.route?.definitionSha256 !== undefined,
    // Not async: the usual call (a definition already confirmed) is handed on without a promise of its own.
    run(ctx, next) {
      return pins.isConfirmed(ctx.route!) ? next(ctx) : checked(ctx, next);
    },
  };

  async function checked(ctx: CallContext, next: Next): Promise<Outcome> {
    const route = ctx.route!;
    const key = `${route.ref}\u0000${route.definitionSha256!}`;
    if (mode === 'warn' && warned.has(key)) return next(ctx);
    let verdict;
    try {
      verdict = await waitedOn(ctx, 'pin', 'store.pin', pins.check(route));
    } catch (err) {
      if (mode === 'warn') {
        log.warn('the pin of a tool could not be checked; the call runs (tools.pinning: warn)', { ref: route.ref, err });
        return next(ctx);
      }
      return refuseAt('pin', ctx, failure(new GatewayError('GW_ERR_STATE_UNAVAILABLE', 'The pinned definition of this tool cannot be checked now, so the call is not run; retry later', undefined, { cause: err })));
    }
    if (verdict.ok) return next(ctx);
    if (mode === 'warn') {
      if (warned.size >= 10_000) warned.clear();
      warned.add(key);
      return next(ctx);
    }
    return refuseAt('pin', ctx, {
      kind: 'tool',
      code: 'tool_changed',
      message: `The definition of "${route.publicName}" changed since it was reviewed (description, schemas or annotations), so it is not run until a reviewer accepts the change. Do not retry now; tell the user that the tool needs review.`,
      details: { pinned: verdict.pin.pinned.sha256, current: route.definitionSha256 },
      meta: { 'dev.gatehouse/tool_ref': route.ref },
    });
  }
}
