// A Redis Cluster whose shard holding the audit chain is full (maxmemory reached under noeviction) while
// the others take writes: realistic, since the audit log is one sorted set on one shard and the only key
// Gatehouse keeps without a TTL, so that shard fills first. The store's ping wrote the key `ping`, which
// hashes to another shard: the store guard's probe marked the store up a second after each failure, so
// once a second a governed call passed the state stage, ran upstream, and was then refused because its
// audit record could not be written (the failure redis-full.test.ts fixed for one server). The ping now
// writes a key in the audit chain's hash slot, the write every governed call needs after it has run.
//
// Two real redis-server cluster nodes; the audit chain's slot is given to the second one alone.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway } from '../helpers/gateway.js';
import { assertRefusedWhileStoreTakesNoWrites, readyz, recordCall, untilServed } from '../helpers/store-outage.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const PREFIX = 'shard:';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let up: CountingUpstream;
let nodeA: TestRedis;
let nodeB: TestRedis;
let a: Redis;
let b: Redis;
before(async () => {
  up = await startCountingUpstream('modern');
  const node = ['cluster-enabled yes', 'cluster-announce-ip 127.0.0.1', 'cluster-node-timeout 5000'];
  nodeA = await startRedis({ config: node });
  nodeB = await startRedis({ config: node });
  a = new Redis(nodeA.url);
  b = new Redis(nodeB.url);
  const auditSlot = Number(await a.call('CLUSTER', 'KEYSLOT', `${PREFIX}{audit}:head`));
  assert.notEqual(Number(await a.call('CLUSTER', 'KEYSLOT', `${PREFIX}ping`)), auditSlot, 'the old ping key hashes to another slot');
  // B holds the audit chain's slot alone; A every other.
  if (auditSlot > 0) await a.call('CLUSTER', 'ADDSLOTSRANGE', '0', String(auditSlot - 1));
  if (auditSlot < 16383) await a.call('CLUSTER', 'ADDSLOTSRANGE', String(auditSlot + 1), '16383');
  await b.call('CLUSTER', 'ADDSLOTS', String(auditSlot));
  await a.call('CLUSTER', 'MEET', '127.0.0.1', String(nodeB.port));
  for (let i = 0; i < 100; i++) {
    const ok = (await Promise.all([a, b].map(async (n) => String(await n.call('CLUSTER', 'INFO')).includes('cluster_state:ok')))).every(Boolean);
    if (ok) return;
    await sleep(100);
  }
  throw new Error('the two-node cluster did not reach cluster_state:ok in 10 s');
});
after(async () => {
  a.disconnect();
  b.disconnect();
  await up.close();
  await nodeA.stop();
  await nodeB.stop();
});

test('the cluster shard holding the audit chain full: /readyz says not ready and governed calls are refused before they run, not once a second run unaudited', { timeout: 60_000 }, async () => {
  const gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    store: { kind: 'redis', url: 'redis://ignored:1', keyPrefix: PREFIX, commandTimeoutMs: 1_000, cluster: { nodes: [`127.0.0.1:${nodeA.port}`, `127.0.0.1:${nodeB.port}`] } },
  });
  try {
    assert.equal((await recordCall(gw, 'before')).status, 200);
    assert.equal((await readyz(gw)).status, 200);
    await b.config('SET', 'maxmemory', '1');
    await assertRefusedWhileStoreTakesNoWrites(gw, up, 'redis');
    await b.config('SET', 'maxmemory', '0');
    const back = await untilServed(() => recordCall(gw, 'after'));
    assert.equal(back.status, 200, back.text);
    assert.equal((await readyz(gw)).status, 200);
  } finally {
    await b.config('SET', 'maxmemory', '0');
    await gw.close();
  }
});
