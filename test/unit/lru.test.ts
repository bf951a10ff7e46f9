// The growing LRU (src/lru.ts): bounded like lru-cache's `max`, but allocating only for the entries it
// holds. Issue 17 item 3: three caches bounded at 100,000 entries held 8 MB of an idle process, because
// `max` allocates its lists up front.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { growingLru } from '../../src/lru.js';
import { AuthFailureLimiter } from '../../src/auth/failure-limit.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';

/** Heap and array-buffer bytes in use, the two places lru-cache's lists live. */
function bytesInUse(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Bytes that making `count` of something costs, the things kept alive until measured. */
function costOf(count: number, make: () => unknown): number {
  const before = bytesInUse();
  const kept = Array.from({ length: count }, make);
  const after = bytesInUse();
  assert.equal(kept.length, count);
  return after - before;
}

const MB = 1024 * 1024;

test('the least recently used entry is forgotten past the bound, and a read makes an entry recent', () => {
  const cache = growingLru<string, number>(3);
  cache.set('a', 1);
  cache.set('b', 2);
  cache.set('c', 3);
  assert.equal(cache.get('a'), 1); // now b is the least recently used
  cache.set('d', 4);
  assert.equal(cache.size, 3);
  assert.equal(cache.has('b'), false);
  assert.deepEqual([...cache.keys()].sort(), ['a', 'c', 'd']);
  // Replacing a value does not count twice against the bound.
  cache.set('d', 5);
  cache.set('d', 6);
  assert.equal(cache.size, 3);
  assert.equal(cache.get('d'), 6);
});

test('the bound holds over many more entries than it allows', () => {
  const cache = growingLru<number, number>(1_000);
  for (let i = 0; i < 5_000; i++) cache.set(i, i);
  assert.equal(cache.size, 1_000);
  assert.equal(cache.has(4_000), true);
  assert.equal(cache.has(3_999), false);
  assert.equal(cache.get(4_999), 4_999);
});

test('other options pass through: entries expire after their ttl', () => {
  let now = 1_000;
  const cache = growingLru<string, string>(10, { ttl: 500, ttlResolution: 0, perf: { now: () => now } });
  cache.set('k', 'v');
  assert.equal(cache.get('k'), 'v');
  now += 501;
  assert.equal(cache.get('k'), undefined);
});

test('a cache bounded at 100,000 entries allocates nothing for the entries it does not hold', () => {
  // lru-cache's `max: 100_000` costs 2.7 MB per cache before its first entry; 20 of them would be 54 MB.
  const cost = costOf(20, () => growingLru<string, number>(100_000));
  assert.ok(cost < 2 * MB, `20 empty caches cost ${(cost / MB).toFixed(1)} MB`);
  // And it grows as entries arrive.
  const cache = growingLru<string, number>(100_000);
  for (let i = 0; i < 50_000; i++) cache.set(`key-${i}`, i);
  assert.equal(cache.size, 50_000);
});

test('an idle failed-auth limiter and an unused SQLite store hold no preallocated lists', () => {
  const limiters = costOf(20, () => new AuthFailureLimiter({ attempts: 10, windowSeconds: 60 }));
  assert.ok(limiters < 2 * MB, `20 idle limiters cost ${(limiters / MB).toFixed(1)} MB`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-lru-'));
  try {
    // The constructor makes the store's directory and nothing else; the writer starts at first use.
    const stores = costOf(20, () => new SqliteStore(path.join(dir, 'state.db')));
    assert.ok(stores < 2 * MB, `20 unused stores cost ${(stores / MB).toFixed(1)} MB`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
