// What a test file of Gatehouse on a shared Redis starts first: the counting upstream (modern era) and a
// real Redis, both for the whole file, closed and stopped after its tests. Call it at the top level.

import { after, before } from 'node:test';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startRedis, type TestRedis } from './redis.js';

export function countingUpstreamAndRedis(): { readonly up: CountingUpstream; readonly redis: TestRedis } {
  let up: CountingUpstream;
  let redis: TestRedis;
  before(async () => {
    up = await startCountingUpstream('modern');
    redis = await startRedis();
  });
  after(async () => {
    await up.close();
    await redis.stop();
  });
  return {
    get up() {
      return up;
    },
    get redis() {
      return redis;
    },
  };
}
