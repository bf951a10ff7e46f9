// bench:check prints, beside a pair-measured ratio, the interval its median is known to within: the
// order statistics of the binomial (sign test) interval, as in the usual tables.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { medianInterval } from '../../../bench/common.js';

const ranks = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);

test('95% intervals are the tabled order statistics: 6th–15th of 20, 10th–21st of 30, 22nd–39th of 60', () => {
  assert.deepEqual(medianInterval(ranks(20)), { low: 6, high: 15, coverage: medianInterval(ranks(20))!.coverage });
  assert.equal(medianInterval(ranks(30))?.low, 10);
  assert.equal(medianInterval(ranks(30))?.high, 21);
  assert.equal(medianInterval(ranks(60))?.low, 22);
  assert.equal(medianInterval(ranks(60))?.high, 39);
  for (const n of [6, 10, 20, 30, 60, 120, 400]) {
    const r = medianInterval(ranks(n))!;
    assert.ok(r.coverage >= 0.95 && r.coverage < 0.99, `n=${n}: coverage ${r.coverage}`);
    assert.equal(r.low + r.high, n + 1, `n=${n}: symmetric ranks`);
  }
});

test('the values are sorted first; too few values give no interval', () => {
  const shuffled = [1.08, 0.97, 1.02, 1.15, 0.91, 1.05, 1.01, 0.99, 1.11, 1.04];
  assert.deepEqual([medianInterval(shuffled)?.low, medianInterval(shuffled)?.high], [0.97, 1.11]);
  assert.equal(medianInterval([1, 2, 3, 4, 5]), undefined);
  assert.equal(medianInterval([]), undefined);
});
