// A failover behind a plain Redis URL (no Sentinel): the name in the URL (DNS, a Service, a virtual IP) now
// leads to the new primary, and the old one has become its replica, read-only. A connection already open
// stays on the old primary, which answers every write with READONLY; ioredis only reconnects when a
// connection breaks, and this one never does, so every write failed with READONLY until the gateway was
// restarted. The store now reconnects on a READONLY answer (ioredis reconnectOnError): the command that got
// it fails (the call fails closed; a write is not sent twice), and the next connection reaches the primary.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { openStore } from '../../src/store/open-store.js';
import { startRedisRelay, type RedisRelay } from '../helpers/redis-relay.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let oldPrimary: TestRedis;
let newPrimary: TestRedis;
let relay: RedisRelay;
before(async () => {
  oldPrimary = await startRedis();
  newPrimary = await startRedis();
  relay = await startRedisRelay(oldPrimary.port);
});
after(async () => {
  await relay.close();
  await oldPrimary.stop();
  await newPrimary.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a primary turned read-only replica is left: the store reconnects and writes to the new primary', { timeout: 30_000 }, async () => {
  const s = openStore({ kind: 'redis', url: relay.url, keyPrefix: 'failover:', commandTimeoutMs: 2_000 });
  const admin = new Redis(oldPrimary.url);
  try {
    await s.ping();
    assert.equal((await s.addToWindow('calls', 1, 60_000)).total, 1);
    // The failover: the old primary follows the new one (read-only), and the URL's name leads to the new one.
    await admin.call('REPLICAOF', '127.0.0.1', String(newPrimary.port));
    relay.retarget(newPrimary.port);
    await assert.rejects(s.addToWindow('calls', 1, 60_000), (err: Error) => err.name === 'StoreUnavailableError' && /READONLY/.test(err.message), 'the command that met the replica fails');
    // Bounded: the store guard's probe pings once a second; ten seconds is many reconnections.
    let answered = false;
    for (let i = 0; i < 50 && !answered; i++) {
      answered = await s.ping().then(
        () => true,
        () => false,
      );
      if (!answered) await sleep(200);
    }
    assert.equal(answered, true, 'a write reaches the new primary without a restart');
    await s.addToWindow('calls', 1, 60_000);
    const reader = new Redis(newPrimary.url);
    const keys = await reader.keys('failover:*').finally(() => reader.disconnect());
    assert.ok(keys.some((k) => k.startsWith('failover:{w:calls}')), `the window was written on the new primary: ${keys.join(', ')}`);
  } finally {
    await admin.call('REPLICAOF', 'NO', 'ONE').catch(() => undefined);
    admin.disconnect();
    await s.close();
  }
});
