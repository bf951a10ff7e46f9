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
    const record = 'evict:i:write-1';
    try {
      assert.deepEqual(await s.claimIdempotency('write-1', 'digest', 'owner', 15_000, 86_400_000), { outcome: 'claimed' });
      assert.equal(await s.completeIdempotency('write-1', 'owner', '{"result":{}}', 86_400_000), true);
      // A finished write's answer is read again only if the client retries: until then it ages in Redis's
      // LRU clock (1 s steps) while other keys are used. Aged here at once (RESTORE IDLETIME, same value and
      // TTL) rather than by waiting. Until 4 December the loop below read the answer with GET after every
      // batch, which made it the most recently used key again: on a loaded machine, where the batches took
      // over a second, volatile-lru then evicted the filler around it and never it.
      const [dump, ttl] = await Promise.all([raw.dumpBuffer(record), raw.pttl(record)]);
      assert.ok(dump !== null && ttl > 0, 'the answer is stored, with a TTL');
      await raw.restore(record, ttl, dump, 'REPLACE', 'IDLETIME', 3_600);
      assert.ok((await raw.object('IDLETIME', record)) as number >= 3_600);
      // Other keys with a TTL (other callers' records, another application's cache) fill the memory: 32 MB
      // in all against maxmemory 8 MB. Each eviction takes the idlest of the keys it samples, so the aged
      // answer goes the first time it is sampled. EXISTS does not touch a key's LRU clock, so looking does
      // not keep it.
      const filler = 'x'.repeat(4_096);
      let gone = false;
      for (let batch = 0; batch < 40 && !gone; batch++) {
        const p = raw.pipeline();
        for (let i = 0; i < 200; i++) p.set(`other:${batch}:${i}`, filler, 'EX', 3_600);
        await p.exec();
        gone = (await raw.exists(record)) === 0;
      }
      assert.equal(gone, true, 'the answer of a finished write was evicted');
      assert.equal(await s.readIdempotency('write-1'), undefined, 'and the store reads nothing, without an error: a retry of the write would run again');
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
