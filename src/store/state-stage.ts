// The state stage: a governed call runs only while its state can be kept. With the store down, the call
// is refused before anything runs (503 GW_ERR_STATE_UNAVAILABLE), never run without its audit record,
// limits or idempotency record (the FITsociety seed: fail closed).

import { failure, GatewayError } from '../errors.js';
import { isGoverned } from '../pipeline/answer-event.js';
import { refuseAt, type Stage } from '../pipeline/stage.js';
import type { StoreGuard } from './guard.js';

export function compileStateStage(guard: StoreGuard): Stage {
  return {
    name: 'state',
    applies: isGoverned,
    run(ctx, next) {
      if (guard.available) return next(ctx);
      return Promise.resolve(refuseAt('state', ctx, failure(new GatewayError('GW_ERR_STATE_UNAVAILABLE', `The ${guard.store.kind} store is unavailable, so this call cannot be recorded; retry later`))));
    },
  };
}
