// A Redis that loses data: restarted without persistence (no AOF), or a failover to a replica that was
// behind. The audit chain's head goes with the data, and the next append chained onto what was left (the
// anchor, or nothing: record 1 again) as if nothing had happened: records were gone from the log and no
// line said so; `audit verify` later passed on the shortened chain unless a head had been kept elsewhere.
// A head this process knew (wrote or read) that is gone from Redis, or replaced by an earlier one, is now
// logged as an error naming the records lost. And `gatehouse doctor` warns about a Redis without AOF, next to
// its warning about an evicting maxmemory-policy.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { checkStore } from '../../src/doctor/store-checks.js';
import { createLogger } from '../../src/log/logger.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { startRedisRelay } from '../helpers/redis-relay.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let up: CountingUpstream;
before(async () => {
  up = await startCountingUpstream('modern');
});
after(async () => {
  await up.close();
});

let n = 0;
async function call(gw: TestGateway, item: string) {
  const req = modernRequest(++n, 'tools/call', { name: 'record', arguments: { item } });
  return post(gw.url, req.body, req.headers);
}

/** Calls until one is answered 200 (the store guard may hold calls back for a second after an outage). */
async function callUntilServed(gw: TestGateway, item: string): Promise<void> {
  for (let i = 0; i < 60; i++) {
    if ((await call(gw, item)).status === 200) return;
    await sleep(100);
  }
  assert.fail(`no call was served after the outage: ${JSON.stringify(gw.logs.slice(-3))}`);
}

const lossLines = (gw: TestGateway) => gw.logs.filter((l) => l.level === 'error' && /audit chain/.test(String(l.msg)));

describe('Redis without persistence, restarted', () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startRedis({ config: ['appendonly no'] });
  });
  after(async () => {
    await redis.stop();
  });

  test('the chain that starts again after the restart is logged as records lost', { timeout: 60_000 }, async () => {
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'redis', url: redis.url, keyPrefix: 'loss:', commandTimeoutMs: 1_000 } });
    try {
      for (let i = 0; i < 3; i++) assert.equal((await call(gw, `before-${i}`)).status, 200);
      assert.deepEqual(lossLines(gw), []);
      await redis.stop();
      await redis.start();
      await callUntilServed(gw, 'after');
      const lines = lossLines(gw);
      assert.equal(lines.length, 1, JSON.stringify(gw.logs.slice(-5)));
      assert.equal(lines[0]!.knownSeq, 3, JSON.stringify(lines[0]));
      assert.equal(lines[0]!.foundSeq, null, JSON.stringify(lines[0]));
      // Once: the chain goes on from what it found, and later appends are not the loss again.
      await callUntilServed(gw, 'later');
      assert.equal(lossLines(gw).length, 1);
    } finally {
      await gw.close();
    }
  });

  test('gatehouse doctor warns that Redis keeps no AOF', async () => {
    const f = await checkStore({ kind: 'redis', url: redis.url, keyPrefix: 'gatehouse:', commandTimeoutMs: 2_000 }, { timeoutMs: 5_000, waitMs: 0 });
    assert.equal(f.verdict, 'warn', JSON.stringify(f));
    assert.match(f.detail, /aof_enabled:0|appendonly/);
    assert.match(f.hint ?? '', /appendonly yes/);
  });
});

describe('a failover to a replica that was behind', () => {
  test('the head found earlier than the one this replica wrote is logged as records lost', { timeout: 60_000 }, async () => {
    const primary = await startRedis();
    const replica = await startRedis();
    const relay = await startRedisRelay(primary.port);
    const raw = new Redis(replica.url);
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'redis', url: relay.url, keyPrefix: 'behind:', commandTimeoutMs: 1_000 } });
    try {
      // Redis 7 waits 5 s (repl-diskless-sync-delay) before the first full sync, for more replicas to join: none will.
      const admin = new Redis(primary.url);
      await admin.call('CONFIG', 'SET', 'repl-diskless-sync-delay', '0');
      admin.disconnect();
      await raw.call('REPLICAOF', '127.0.0.1', String(primary.port));
      for (let i = 0; i < 2; i++) assert.equal((await call(gw, `both-${i}`)).status, 200);
      // Bounded wait until the replica holds the head of record 2 (the sync forks and copies: slow when loaded).
      for (let i = 0; i < 400 && (await raw.get('behind:{audit}:head'))?.includes('"seq":2') !== true; i++) await sleep(50);
      assert.match((await raw.get('behind:{audit}:head')) ?? '', /"seq":2/);
      // The replica falls behind (its link cut), and the primary takes two more records.
      await raw.call('REPLICAOF', 'NO', 'ONE');
      for (let i = 0; i < 2; i++) assert.equal((await call(gw, `primary-only-${i}`)).status, 200);
      // The primary dies; the URL's name leads to the promoted replica.
      relay.retarget(replica.port);
      await primary.stop();
      await callUntilServed(gw, 'after-failover');
      const lines = lossLines(gw);
      assert.equal(lines.length, 1, JSON.stringify(gw.logs.slice(-5)));
      assert.equal(lines[0]!.knownSeq, 4, JSON.stringify(lines[0]));
      assert.equal(lines[0]!.foundSeq, 2, JSON.stringify(lines[0]));
    } finally {
      await gw.close();
      raw.disconnect();
      await relay.close();
      await primary.stop();
      await replica.stop();
    }
  });
});

describe('replicas appending to one chain', () => {
  test('move its head on, which is no loss: nothing is logged', { timeout: 60_000 }, async () => {
    const redis = await startRedis();
    const lines: string[] = [];
    const log = createLogger('info', (line) => void lines.push(line));
    const replicas = [0, 1, 2].map(() => new RedisStore({ url: redis.url, keyPrefix: 'shared:', commandTimeoutMs: 2_000 }, log));
    try {
      for (let round = 0; round < 20; round++) {
        await Promise.all(replicas.map((r, i) => r.appendAudit({ time: new Date().toISOString(), callId: `c${round}-${i}`, runId: 'r', subject: 'alice', method: 'tools/call', outcome: 'ok', latencyMs: 1 })));
      }
      const raw = new Redis(redis.url);
      assert.equal(JSON.parse((await raw.get('shared:{audit}:head'))!).seq, 60);
      raw.disconnect();
      assert.deepEqual(lines, []);
    } finally {
      for (const r of replicas) await r.close();
      await redis.stop();
    }
  });
});
