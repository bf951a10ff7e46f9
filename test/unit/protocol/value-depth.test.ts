// nestedDeeperThan (src/protocol/value-depth.ts): how deep a parsed value nests, found without recursion,
// so it can be asked of a value too deep for any recursive walk.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nestedDeeperThan } from '../../../src/protocol/value-depth.js';

test('counts objects and arrays alike; scalars add nothing', () => {
  assert.equal(nestedDeeperThan('text', 0), false);
  assert.equal(nestedDeeperThan({}, 0), true);
  assert.equal(nestedDeeperThan({}, 1), false);
  assert.equal(nestedDeeperThan({ a: [{ b: 1 }] }, 3), false);
  assert.equal(nestedDeeperThan({ a: [{ b: 1 }] }, 2), true);
  assert.equal(nestedDeeperThan([1, [2, [3]], { x: null }], 3), false);
  assert.equal(nestedDeeperThan([1, [2, [3, []]]], 3), true);
});

test('a value 200,000 levels deep is measured without overflowing the stack', () => {
  const depth = 200_000;
  const deep = JSON.parse('{"a":'.repeat(depth) + '1' + '}'.repeat(depth)) as unknown;
  assert.equal(nestedDeeperThan(deep, 256), true);
  assert.equal(nestedDeeperThan(deep, depth), false);
});
