// Redis restarted and still loading its dataset: it accepts connections at once and answers every command
// that touches data with "-LOADING Redis is loading the dataset in memory" until it is done (seconds to
// minutes for a large dataset). The store has no ioredis ready check (redis-store.ts: it sends INFO, which
// an ACL may deny), and relies on its ping being a write, which Redis refuses while loading: the store is
// down, /readyz says not ready, governed calls are refused before they run, and no call is answered 200
// without its audit record; once loaded, service resumes on its own. This proves it on a real redis-server
// held in the loading state on purpose: `key-load-delay` (a Redis 7 debug setting, microseconds per key)
// slows the load of a small dataset to many seconds, events are processed every KB read
// (`loading-process-events-interval-bytes`) so clients are answered while it loads, and the test ends the
// load by setting the delay to 0 (CONFIG SET is served while loading).
//
// GATEWAY-REQUIREMENTS: fail closed when the state store is unavailable; /readyz reflects the store.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { checkStore } from '../../src/doctor/store-checks.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway } from '../helpers/gateway.js';
import { readyz, recordCall, untilServed } from '../helpers/store-outage.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let up: CountingUpstream;
let redis: TestRedis;
before(async () => {
  up = await startCountingUpstream('modern');
  // 500 µs a key: the 20,000 keys below take about 12 s to load, far longer than the checks made meanwhile.
  redis = await startRedis({ config: ['key-load-delay 500', 'loading-process-events-interval-bytes 1024'] });
});
after(async () => {
  await up.close();
  await redis.stop();
});

/** A client that sends commands during loading (no ready check, which would wait for the load). */
function rawClient(): Redis {
  return new Redis(redis.url, { enableReadyCheck: false, maxRetriesPerRequest: 0, retryStrategy: () => 100 });
}

async function loading(raw: Redis): Promise<boolean> {
  return /^loading:1\s*$/m.test(await raw.info('persistence'));
}

/** 20,000 small keys (about 400 KB), then an AOF rewrite, so a restart loads them from the AOF's RDB base. */
async function fillAndPersist(raw: Redis): Promise<void> {
  await raw.eval("for i = 1, 20000 do redis.call('SET', 'filler:' .. i, string.rep('x', 16)) end return 1", 0);
  await raw.bgrewriteaof();
  for (let i = 0; i < 200; i++) {
    const info = await raw.info('persistence');
    if (/^aof_rewrite_in_progress:0\s*$/m.test(info) && /^aof_rewrite_scheduled:0\s*$/m.test(info)) return;
    await sleep(50);
  }
  throw new Error('the AOF rewrite did not finish in 10 s');
}

test('while Redis loads its dataset after a restart, /readyz says not ready and no governed call is answered without its record; served again once loaded', { timeout: 90_000 }, async () => {
  const prefix = 'loading:';
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'redis', url: redis.url, keyPrefix: prefix, commandTimeoutMs: 1_000 } });
  let raw = rawClient();
  try {
    assert.equal((await recordCall(gw, 'before')).status, 200);
    assert.equal((await readyz(gw)).status, 200);
    await fillAndPersist(raw);
    raw.disconnect();

    await redis.stop();
    await redis.start();
    raw = rawClient();
    assert.equal(await loading(raw), true, 'Redis is loading its dataset');
    // The store's client reconnects within 2 s (its retry strategy): its commands then reach a loading Redis.
    await sleep(2_500);

    // The first call after the restart: the guard has seen no failure yet. It may reach the upstream, but it
    // must not be answered as done, since its audit record cannot be written.
    const first = await recordCall(gw, 'first-while-loading');
    assert.equal(first.status, 503, `a call while Redis loads is not answered as done: ${first.text}`);
    assert.equal(first.json().error.data.code, 'GW_ERR_STATE_UNAVAILABLE', first.text);

    const ready = await readyz(gw);
    assert.equal(ready.status, 503, JSON.stringify(ready.body));
    assert.deepEqual(ready.body.store, { kind: 'redis', up: false });

    const executed = up.executions.length;
    for (let i = 0; i < 3; i++) {
      const refused = await recordCall(gw, `while-loading-${i}`);
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.json().error.data.code, 'GW_ERR_STATE_UNAVAILABLE', refused.text);
      // Longer than the guard's probe (every second): its pings are refused too.
      await sleep(600);
    }
    assert.equal(up.executions.length, executed, 'no call ran upstream while Redis was loading');
    assert.equal((await readyz(gw)).status, 503, 'still not ready');
    // gatehouse doctor, meanwhile: the store fails, and the hint says to wait for the load, not to fix store.url.
    const doctor = await checkStore({ kind: 'redis', url: redis.url, keyPrefix: prefix, commandTimeoutMs: 1_000 }, { timeoutMs: 5_000, waitMs: 0 });
    assert.equal(doctor.verdict, 'fail', JSON.stringify(doctor));
    assert.match(doctor.detail, /LOADING/, JSON.stringify(doctor));
    assert.match(doctor.hint ?? '', /loading its dataset.*run doctor again once it is loaded/, JSON.stringify(doctor));
    assert.equal(await loading(raw), true, 'every check above was made while Redis was still loading');
    const down = gw.logs.find((l) => l.msg === 'the store is unavailable: governed calls are refused until it is back');
    assert.match(String(down?.err), /LOADING/, `the log says why: ${JSON.stringify(down)}`);

    // End the load (CONFIG SET is served while loading); service resumes without a restart of the gateway.
    await raw.config('SET', 'key-load-delay', '0');
    for (let i = 0; i < 100 && (await loading(raw)); i++) await sleep(100);
    assert.equal(await loading(raw), false, 'the load finished');
    const back = await untilServed(() => recordCall(gw, 'after'));
    assert.equal(back.status, 200, back.text);
    assert.equal((await readyz(gw)).status, 200);

    // Every call answered 200 has its record in the chain the gateway kept in Redis.
    const records = (await raw.zrange(`${prefix}{audit}:log`, 0, -1)).map((r) => JSON.parse(r) as { outcome: string; tool?: string; callId: string });
    const ok = records.filter((r) => r.outcome === 'ok');
    assert.equal(ok.length, 2, `the two calls answered 200 were recorded, no other was recorded as done: ${JSON.stringify(records)}`);
  } finally {
    await raw.config('SET', 'key-load-delay', '0').catch(() => undefined);
    raw.disconnect();
    await gw.close();
  }
});
