// `gatehouse doctor`'s store row for a Redis that answers AUTH with a notice instead of a failure: a
// password in store.url that the server does not need (no requirepass). ioredis carries on
// unauthenticated, and the store tells it once as a warning through its logger (store/redis-notices.ts).
// The doctor opened its RedisStore without a logger, so the notice went nowhere and the row said "ok": the
// operator who runs doctor to check the setup was never told that the Redis they believe protected by a
// password takes commands from anyone. The row is now a warning that says so, without the password.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkStore } from '../../src/doctor/store-checks.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const limits = { timeoutMs: 8_000, waitMs: 0 };
const PASSWORD = 'not-needed-secret-4711';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

test('a password the Redis server does not need: the store row warns, and does not print the password', async () => {
  const url = redis.url.replace('redis://', `redis://:${PASSWORD}@`);
  const found = await checkStore({ kind: 'redis', url, keyPrefix: 'doctor-notices:', commandTimeoutMs: 2_000 }, limits);
  assert.equal(found.verdict, 'warn', JSON.stringify(found));
  assert.match(found.detail, /does not need the password/, JSON.stringify(found));
  assert.match(found.hint ?? '', /requirepass|take it out of the URL/, JSON.stringify(found));
  assert.ok(!JSON.stringify(found).includes(PASSWORD), 'the password is not printed');
});

test('the same server with no password in the URL: the row stays ok (no notice)', async () => {
  const found = await checkStore({ kind: 'redis', url: redis.url, keyPrefix: 'doctor-notices:', commandTimeoutMs: 2_000 }, limits);
  assert.equal(found.verdict, 'ok', JSON.stringify(found));
});
