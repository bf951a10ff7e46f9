// A Redis with a memory limit and an evicting policy (volatile-lru is the default of several hosted Redis
// services) drops keys that have a TTL when memory runs short, and every key Gatehouse keeps but the audit
// log has one: an idempotency record (a retry then runs the write again), a budget counter (spending starts
// again from zero), a breaker. Nothing fails, so the gateway cannot tell. `gatehouse doctor` wrote its
// scratch key and said the store was fine; it now warns, naming the policy, and says to use noeviction
// (with which a full Redis refuses writes, and the gateway refuses calls instead of losing their state).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { checkStore } from '../../src/doctor/store-checks.js';
import { openStore } from '../../src/store/open-store.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const limits = { timeoutMs: 5_000, waitMs: 0 };

describe('a Redis that evicts keys with a TTL', () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startRedis({ config: ['maxmemory 8mb', 'maxmemory-policy volatile-lru'] });
  });
  after(async () => {
    await redis.stop();
  });

  test('loses a stored idempotency answer under memory pressure, without an error', async () => {
    const s = openStore({ kind: 'redis', url: redis.url, keyPrefix: 'evict:', commandTimeoutMs: 2_000 });
    const raw = new Redis(redis.url);
    try {
      assert.deepEqual(await s.claimIdempotency('write-1', 'digest', 'owner', 15_000, 86_400_000), { outcome: 'claimed' });
      assert.equal(await s.completeIdempotency('write-1', 'owner', '{"result":{}}', 86_400_000), true);
      // Other keys with a TTL (other callers' records, another application's cache) fill the memory.
      const filler = 'x'.repeat(4_096);
      let gone = false;
      for (let batch = 0; batch < 40 && !gone; batch++) {
        const p = raw.pipeline();
        for (let i = 0; i < 200; i++) p.set(`other:${batch}:${i}`, filler, 'EX', 3_600);
        await p.exec();
        gone = (await s.readIdempotency('write-1')) === undefined;
      }
      assert.equal(gone, true, 'the answer of a finished write was evicted: a retry of it would run again');
    } finally {
      raw.disconnect();
      await s.close();
    }
  });

  test('gatehouse doctor warns about it, naming the policy', async () => {
    const f = await checkStore({ kind: 'redis', url: redis.url, keyPrefix: 'gatehouse:', commandTimeoutMs: 2_000 }, limits);
    assert.equal(f.verdict, 'warn', JSON.stringify(f));
    assert.match(f.detail, /maxmemory-policy volatile-lru/);
    assert.match(f.hint ?? '', /noeviction/);
  });
});

describe('a Redis that does not evict', () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startRedis({ config: ['maxmemory 64mb', 'maxmemory-policy noeviction'] });
  });
  after(async () => {
    await redis.stop();
  });

  test('passes the doctor', async () => {
    const f = await checkStore({ kind: 'redis', url: redis.url, keyPrefix: 'gatehouse:', commandTimeoutMs: 2_000 }, limits);
    assert.equal(f.verdict, 'ok', JSON.stringify(f));
  });
});
