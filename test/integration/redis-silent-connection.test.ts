// The store's connection to Redis goes silent: a NAT, firewall or load balancer between them forgot it
// (idle timeouts of cloud NATs and load balancers) and drops its packets without a reset, while Redis
// itself is fine and a new connection would work. ioredis only reconnects when a connection closes, and a
// command that times out (commandTimeoutMs) closes nothing: every store operation timed out on the dead
// connection, so the store was down and every governed call refused, until the kernel gave up on the
// connection (about 15 minutes of TCP retransmissions on Linux; never, behind a proxy that keeps the TCP
// side alive). A connection that answers nothing for commandTimeoutMs after a command is now closed, and
// the next one reaches Redis: service resumes on its own within seconds.
//
// Real redis-server; between it and the store a TCP relay that silences the connections open at a moment
// (the misbehaving network, on purpose) while new ones pass.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open-store.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedisRelay, type RedisRelay } from '../helpers/redis-relay.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway } from '../helpers/gateway.js';
import { readyz, recordCall, untilServed } from '../helpers/store-outage.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let redis: TestRedis;
let relay: RedisRelay;
let up: CountingUpstream;
before(async () => {
  redis = await startRedis();
  relay = await startRedisRelay(redis.port);
  up = await startCountingUpstream('modern');
});
after(async () => {
  await up.close();
  await relay.close();
  await redis.stop();
});

test('a store whose connection went silent fails the command that met it, then reaches Redis on a new connection', { timeout: 30_000 }, async () => {
  const s = openStore({ kind: 'redis', url: relay.url, keyPrefix: 'silent:', commandTimeoutMs: 500 });
  try {
    await s.ping();
    relay.silence();
    await assert.rejects(s.ping(), { name: 'StoreUnavailableError' }, 'the command on the silent connection fails');
    // Bounded: about ten seconds, many command timeouts and reconnections.
    let answered = false;
    for (let i = 0; i < 15 && !answered; i++) {
      answered = await s.ping().then(
        () => true,
        () => false,
      );
      if (!answered) await sleep(200);
    }
    assert.equal(answered, true, 'a ping reaches Redis again without a restart');
  } finally {
    await s.close();
  }
});

// ioredis leaves the socket timer of a connection that closed with a command under way running; it fired
// on the next connection, healthy, and closed it: a second failure a commandTimeoutMs after each break.
test('a connection that broke with a command under way leaves nothing that closes the next one', { timeout: 30_000 }, async () => {
  const s = openStore({ kind: 'redis', url: relay.url, keyPrefix: 'silent-next:', commandTimeoutMs: 1_000 });
  try {
    await s.ping();
    relay.dropAfter('broken-mid-command');
    await assert.rejects(s.addToWindow('broken-mid-command', 1, 60_000), { name: 'StoreUnavailableError' });
    // Reconnected (bounded): then every ping for twice the command timeout is answered.
    let answered = false;
    for (let i = 0; i < 50 && !answered; i++) answered = await s.ping().then(() => true, () => sleep(50).then(() => false));
    assert.equal(answered, true, 'reconnected');
    const failures: string[] = [];
    const until = Date.now() + 2_000;
    while (Date.now() < until) {
      await s.ping().catch((err: Error) => failures.push(err.message));
      await sleep(50);
    }
    assert.deepEqual(failures, [], 'the new connection was left alone');
  } finally {
    await s.close();
  }
});

test('a gateway whose store connection went silent is ready and serves again within seconds, without a restart', { timeout: 30_000 }, async () => {
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'redis', url: relay.url, keyPrefix: 'silent-gw:', commandTimeoutMs: 500 } });
  try {
    assert.equal((await recordCall(gw, 'before')).status, 200);
    relay.silence();
    const refused = await recordCall(gw, 'on-the-silent-connection');
    assert.equal(refused.status, 503, refused.text);
    const back = await untilServed(() => recordCall(gw, 'after'), 15);
    assert.equal(back.status, 200, back.text);
    assert.equal((await readyz(gw)).status, 200);
  } finally {
    await gw.close();
  }
});
