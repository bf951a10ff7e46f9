// The arithmetic both stores share (the SQLite worker runs it, Redis' Lua mirrors it): a token bucket
// whose clock steps back, and budget totals of fractional costs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { budgetRefund, budgetSpend, bucketTake } from '../../../src/store/counter-math.js';

test('a clock that steps back refills nothing and leaves a bucket as it was, never below zero', () => {
  // Until 3 December the negative refill drained a bucket of 19 tokens to -581 for a 60 s step: every
  // caller was refused for about as long as the step.
  const bucket = { rate: 10, perMs: 1000, burst: 20 };
  const now = 1_000_000_000;
  const first = bucketTake(undefined, bucket, 1, now);
  assert.equal(first.result.remaining, 19);
  const stepped = bucketTake(first.row, bucket, 1, now - 60_000);
  assert.equal(stepped.result.allowed, true);
  assert.equal(stepped.result.remaining, 18);
  assert.equal(stepped.row.updatedAt, now, 'the later time is kept');
  // Time then passes on the stepped clock: nothing is refilled until it catches up with the bucket's time.
  assert.equal(bucketTake(stepped.row, bucket, 1, now - 55_000).result.remaining, 17);
  assert.equal(bucketTake(stepped.row, bucket, 1, now + 1_000).result.remaining, 20 - 1);
});

test('fractional budget costs add up as written', () => {
  let row;
  let admitted = 0;
  for (let i = 0; i < 101; i++) {
    const spent = budgetSpend(row, 0.01, 1, 42, 0);
    if (spent.result.allowed) {
      admitted++;
      row = spent.row;
    }
  }
  assert.equal(admitted, 100);
  assert.equal(row?.total, 1);
  assert.equal(budgetRefund({ total: 0.3, resetsAt: 42 }, 0.1, 0)?.total, 0.2);
});
