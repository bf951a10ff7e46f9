// The failed-authentication limit on its own, with a clock the test moves: counts in windows (aligned to
// the epoch, as the store keeps them), a block until the window ends, a shared counter standing in for the
// store, and counting in memory when the store cannot count.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthFailureLimiter, type CountFailure } from '../../../src/auth/failure-limit.js';

/** A counter like the store's addToWindow, on the test's clock. */
function sharedCounter(now: () => number): CountFailure & { calls: number } {
  const windows = new Map<string, { total: number; resetsAt: number }>();
  const count = (async (key: string, windowMs: number) => {
    count.calls++;
    const t = now();
    const resetsAt = t - (t % windowMs) + windowMs;
    const w = windows.get(key);
    const next = w && w.resetsAt === resetsAt ? { total: w.total + 1, resetsAt } : { total: 1, resetsAt };
    windows.set(key, next);
    return next;
  }) as CountFailure & { calls: number };
  count.calls = 0;
  return count;
}

test('an address is refused once it reaches the limit, until its window ends', async () => {
  let now = 60_000_000;
  const limiter = new AuthFailureLimiter({ attempts: 2, windowSeconds: 60 }, sharedCounter(() => now), () => now);
  assert.equal(limiter.retryAfter('a'), 0);
  await limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 0);
  await limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 60);
  assert.equal(limiter.retryAfter('b'), 0, 'other addresses are not affected');
  now += 59_500;
  assert.equal(limiter.retryAfter('a'), 1);
  now += 500;
  assert.equal(limiter.retryAfter('a'), 0, 'a new window starts clean');
  await limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 0);
});

test('replicas sharing the counter count an address once: failures on both add up', async () => {
  const now = 120_000_000;
  const counter = sharedCounter(() => now);
  const a = new AuthFailureLimiter({ attempts: 3, windowSeconds: 60 }, counter, () => now);
  const b = new AuthFailureLimiter({ attempts: 3, windowSeconds: 60 }, counter, () => now);
  await a.fail('x');
  await b.fail('x');
  assert.equal(a.retryAfter('x') + b.retryAfter('x'), 0);
  await b.fail('x');
  assert.equal(b.retryAfter('x'), 60, 'the third failure, wherever it happened, blocks');
  assert.equal(counter.calls, 3);
});

test('while the store cannot count, this replica counts in memory and the limit holds', async () => {
  const now = 0;
  const limiter = new AuthFailureLimiter({ attempts: 2, windowSeconds: 60 }, () => Promise.reject(new Error('store down')), () => now);
  await limiter.fail('a');
  await limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 60);
});

test('attempts: 0 turns the limit off; a reload with other limits judges each address anew', async () => {
  const now = 0;
  const limiter = new AuthFailureLimiter({ attempts: 0, windowSeconds: 60 }, sharedCounter(() => now), () => now);
  for (let i = 0; i < 100; i++) await limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 0);
  limiter.configure({ attempts: 1, windowSeconds: 60 });
  await limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 60);
  limiter.configure({ attempts: 5, windowSeconds: 60 });
  assert.equal(limiter.retryAfter('a'), 0);
  for (let i = 0; i < 3; i++) await limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 0, 'attempts 0 counted nothing; 1 + 3 = 4 of 5');
  await limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 60);
});
