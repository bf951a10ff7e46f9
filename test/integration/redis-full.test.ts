// A Redis that answers but refuses writes: full (maxmemory reached under the default noeviction policy:
// "OOM command not allowed"; a read-only replica after a failover, and a failed snapshot's MISCONF, look
// the same). Store.ping promises the store "answers and can write" (store.ts); the Redis store's ping was a
// PING, which such a Redis answers. So /readyz said ready, and the store guard's probe marked the store up a
// second after every failure: the next governed call passed the state stage, ran upstream, and then its
// audit record could not be written, a write that took effect unaudited, once a second. The ping now
// writes (a scratch key with a TTL): while Redis refuses writes the store stays down, governed calls are
// refused before they run (503 GW_ERR_STATE_UNAVAILABLE), and service resumes on its own once it takes
// writes again.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { openStore } from '../../src/store/open-store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway } from '../helpers/gateway.js';
import { assertRefusedWhileStoreTakesNoWrites, readyz, recordCall, untilServed } from '../helpers/store-outage.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let up: CountingUpstream;
let redis: TestRedis;
let raw: Redis;
before(async () => {
  up = await startCountingUpstream('modern');
  redis = await startRedis();
  raw = new Redis(redis.url);
});
after(async () => {
  raw.disconnect();
  await up.close();
  await redis.stop();
});

test("a full Redis fails the store's ping, which answers again once Redis takes writes", async () => {
  const s = openStore({ kind: 'redis', url: redis.url, keyPrefix: 'full-ping:', commandTimeoutMs: 2_000 });
  try {
    await s.ping();
    await raw.config('SET', 'maxmemory', '1');
    await assert.rejects(s.ping(), (err: Error) => err.name === 'StoreUnavailableError' && /OOM/.test(err.message));
    await raw.config('SET', 'maxmemory', '0');
    await s.ping();
  } finally {
    await raw.config('SET', 'maxmemory', '0');
    await s.close();
  }
});

test('with Redis full, /readyz says not ready and governed calls are refused before they run, not run unaudited; back on its own', { timeout: 60_000 }, async () => {
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'redis', url: redis.url, keyPrefix: 'full:', commandTimeoutMs: 1_000 } });
  try {
    assert.equal((await recordCall(gw, 'before')).status, 200);
    assert.equal((await readyz(gw)).status, 200);
    await raw.config('SET', 'maxmemory', '1');
    await assertRefusedWhileStoreTakesNoWrites(gw, up, 'redis');
    await raw.config('SET', 'maxmemory', '0');
    const back = await untilServed(() => recordCall(gw, 'after'));
    assert.equal(back.status, 200, back.text);
    assert.equal((await readyz(gw)).status, 200);
  } finally {
    await raw.config('SET', 'maxmemory', '0');
    await gw.close();
  }
});

// The guard marked the store up on any operation that answered, and a full Redis answers reads: a metrics
// scrape (it counts pending approvals), the approval expiry sweep or an inbox view listed approvals, and
// the next governed call ran upstream with its record unwritable. An answer now only has the guard ask
// for a ping (a write) at once; the store is up when that answers.
test('with Redis full, a read that answers (a metrics scrape listing approvals) does not mark the store up', { timeout: 60_000 }, async () => {
  const gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    store: { kind: 'redis', url: redis.url, keyPrefix: 'full-read:', commandTimeoutMs: 1_000 },
    metrics: { enabled: true, port: 0 },
    admin: { enabled: true, port: 0, token: 'admin-token-0123456789abcdef' },
    policy: { approvals: [{ id: 'lookups', tools: ['up/lookup'] }] },
  });
  try {
    assert.equal((await recordCall(gw, 'before')).status, 200);
    await raw.config('SET', 'maxmemory', '1');
    assert.equal((await recordCall(gw, 'first-when-full')).status, 503);
    const executed = up.executions.length;
    for (let i = 0; i < 3; i++) {
      const metrics = await (await request(gw.gateway.metricsUrl!)).body.text();
      assert.match(metrics, /^gatehouse_store_up 0$/m, 'the scrape itself says the store is down');
      const refused = await recordCall(gw, `after-scrape-${i}`);
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.json().error.data.code, 'GW_ERR_STATE_UNAVAILABLE', refused.text);
    }
    assert.equal(up.executions.length, executed, 'no call ran upstream while its record could not be written');
    await raw.config('SET', 'maxmemory', '0');
    const back = await untilServed(() => recordCall(gw, 'after'));
    assert.equal(back.status, 200, back.text);
  } finally {
    await raw.config('SET', 'maxmemory', '0');
    await gw.close();
  }
});
