// A Redis user whose ACL allows scripts but denies a command the store's scripts run (`-zadd`: the audit
// append's, `-@hash`: the token buckets'). The store's ping was one SET inside a script, which such a user
// may run: the ping passed, so `gatehouse doctor` said the store was fine, /readyz said ready and the store
// guard marked the store up a second after each failure, while every governed call failed (its audit
// record, or its rate limit, could not be written), one of them run upstream each second before its
// record failed. The ping now runs each command the gateway's operations use, on scratch keys in the audit
// chain's hash slot (see Store.ping: "answers and can write"), so the denial is found by the ping.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { checkStore } from '../../src/doctor/store-checks.js';
import { openStore } from '../../src/store/open-store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway } from '../helpers/gateway.js';
import { assertRefusedWhileStoreTakesNoWrites, readyz } from '../helpers/store-outage.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let up: CountingUpstream;
let redis: TestRedis;
let admin: Redis;
const userUrl = (user: string) => `redis://${user}:${user}-pw@127.0.0.1:${redis.port}`;
before(async () => {
  up = await startCountingUpstream('modern');
  redis = await startRedis();
  admin = new Redis(redis.url);
  await admin.call('ACL', 'SETUSER', 'nozadd', 'on', '>nozadd-pw', '~*', '+@all', '-zadd');
  await admin.call('ACL', 'SETUSER', 'nohash', 'on', '>nohash-pw', '~*', '+@all', '-@hash');
  // The approvals' pages read their index by lex (approval-index): that read is in the ping too.
  await admin.call('ACL', 'SETUSER', 'nolex', 'on', '>nolex-pw', '~*', '+@all', '-zrangebylex');
});
after(async () => {
  admin.disconnect();
  await up.close();
  await redis.stop();
});

for (const [user, command] of [['nozadd', 'zadd'], ['nohash', 'hset'], ['nolex', 'zrangebylex']] as const) {
  test(`the store ping fails for a user that may run scripts but not ${command}, naming NOPERM and the command`, async () => {
    const s = openStore({ kind: 'redis', url: userUrl(user), keyPrefix: `acl-${user}:`, commandTimeoutMs: 1_000 });
    try {
      await assert.rejects(s.ping(), (err: Error) => err.name === 'StoreUnavailableError' && /NOPERM/.test(err.message) && err.message.toLowerCase().includes(command));
    } finally {
      await s.close();
    }
    // A failed ping leaves no key behind without a TTL.
    for (const key of await admin.keys(`acl-${user}:*`)) assert.ok((await admin.pttl(key)) > 0, `${key} has a TTL`);
  });
}

test('gatehouse doctor fails the store of a user that may not ZADD, with the ACL hint', async () => {
  const found = await checkStore({ kind: 'redis', url: userUrl('nozadd'), keyPrefix: 'doctor-acl:', commandTimeoutMs: 1_000 }, { timeoutMs: 8_000, waitMs: 0 });
  assert.equal(found.verdict, 'fail', JSON.stringify(found));
  assert.match(found.detail, /NOPERM/, JSON.stringify(found));
  assert.match(found.hint ?? '', /lacks a permission/, JSON.stringify(found));
});

test('with a user that may not ZADD, /readyz says not ready and governed calls are refused before they run', { timeout: 60_000 }, async () => {
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'redis', url: userUrl('nozadd'), keyPrefix: 'acl-gw:', commandTimeoutMs: 1_000 } });
  try {
    await assertRefusedWhileStoreTakesNoWrites(gw, up, 'redis');
    assert.equal((await readyz(gw)).status, 503);
  } finally {
    await gw.close();
  }
});

test('a user with every command the store needs still pings', async () => {
  const s = openStore({ kind: 'redis', url: redis.url, keyPrefix: 'acl-all:', commandTimeoutMs: 1_000 });
  try {
    await s.ping();
    for (const key of await admin.keys('acl-all:*')) assert.ok((await admin.pttl(key)) > 0, `${key} has a TTL`);
  } finally {
    await s.close();
  }
});
