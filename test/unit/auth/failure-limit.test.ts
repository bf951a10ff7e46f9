// The failed-authentication window on its own, with a clock the test moves.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthFailureLimiter } from '../../../src/auth/failure-limit.js';

test('an address is refused once it reaches the limit, until its window ends', () => {
  let now = 1_000_000;
  const limiter = new AuthFailureLimiter({ attempts: 2, windowSeconds: 60 }, () => now);
  assert.equal(limiter.retryAfter('a'), 0);
  limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 0);
  limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 60);
  assert.equal(limiter.retryAfter('b'), 0, 'other addresses are not affected');
  now += 59_500;
  assert.equal(limiter.retryAfter('a'), 1);
  now += 500;
  assert.equal(limiter.retryAfter('a'), 0, 'a new window starts clean');
  limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 0);
});

test('attempts: 0 turns the limit off; a reload keeps open windows', () => {
  const now = 0;
  const limiter = new AuthFailureLimiter({ attempts: 0, windowSeconds: 60 }, () => now);
  for (let i = 0; i < 100; i++) limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 0);
  limiter.configure({ attempts: 1, windowSeconds: 60 });
  limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 60);
  limiter.configure({ attempts: 5, windowSeconds: 60 });
  assert.equal(limiter.retryAfter('a'), 0);
  limiter.fail('a');
  limiter.fail('a');
  limiter.fail('a');
  limiter.fail('a');
  assert.equal(limiter.retryAfter('a'), 60);
});
