// `gatehouse doctor` through Sentinel (store.sentinel): its warnings about eviction and persistence name
// the server they are about. They named it from the client's own options, which with Sentinel are
// ioredis' defaults (localhost:6379), not the primary the sentinels gave: the operator was told to fix a
// server the deployment does not have. They now name the primary the store is connected to.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkStore } from '../../src/doctor/store-checks.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let primary: TestRedis;
let sentinel: TestRedis;
before(async () => {
  // No append-only file and an evicting policy: both warnings.
  primary = await startRedis({ config: ['appendonly no', 'maxmemory 100mb', 'maxmemory-policy allkeys-lru'] });
  sentinel = await startRedis({ mode: 'sentinel', primaryPort: primary.port });
});
after(async () => {
  await sentinel.stop();
  await primary.stop();
});

test('through Sentinel, the eviction and persistence warnings name the primary the sentinels gave', { timeout: 60_000 }, async () => {
  const found = await checkStore(
    { kind: 'redis', url: 'redis://ignored:1', keyPrefix: 'doctor-sentinel:', commandTimeoutMs: 2_000, sentinel: { name: 'primary', nodes: [`127.0.0.1:${sentinel.port}`] } } as never,
    { timeoutMs: 20_000, waitMs: 0 },
  );
  assert.equal(found.verdict, 'warn', JSON.stringify(found));
  const server = `127.0.0.1:${primary.port}`;
  assert.match(found.detail, new RegExp(`${server} has maxmemory`), found.detail);
  assert.match(found.detail, new RegExp(`${server} has persistence off`), found.detail);
  assert.doesNotMatch(found.detail, /localhost:6379/);
});
