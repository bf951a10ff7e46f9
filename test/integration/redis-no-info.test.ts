// Some Redis deployments do not let Gatehouse's user run INFO: an ACL user without +info (least privilege;
// `-@dangerous` takes it too), or a managed service that renames or removes the command. Gatehouse needs no
// INFO to work: whether the store takes writes is judged by its own write ping (store/guard.ts). ioredis's
// ready check sends INFO on every connection: a refused one (NOPERM) it skips with a console.warn of its own
// on stderr, outside Gatehouse's log, at every reconnection; an INFO the server does not know failed the check,
// and the connection was dropped and opened again for good, so with a plain store.url every store operation
// failed ("Stream isn't writeable"), /readyz never said ready and every governed call was refused. And
// `gatehouse doctor`, which reads INFO for its warnings about eviction and persistence, failed the store
// check ("check store.url ... and that this user may write keys") on a store that works. The ready check is
// off for a plain URL (its one use there, waiting while Redis loads its data, is the write ping's too: Redis
// answers LOADING and the store is down until it is loaded), and the doctor warns that it could not read INFO.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { checkStore } from '../../src/doctor/store-checks.js';
import { openStore } from '../../src/store/open-store.js';
import { startGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const limits = { timeoutMs: 5_000, waitMs: 0 };
const EVERYTHING = { name: 'everything', command: [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] };

/** The store in use, the gateway's readiness, and what the doctor says, with everything ioredis writes to the console caught. */
async function judge(url: string, more: Record<string, unknown> = {}) {
  const warned: string[] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => void warned.push(args.map(String).join(' '));
  try {
    const s = openStore({ kind: 'redis', url, keyPrefix: 'noinfo:', commandTimeoutMs: 2_000, ...more } as never);
    try {
      await s.ping();
      assert.deepEqual(await s.claimIdempotency('write-1', 'digest', 'owner', 15_000, 86_400_000), { outcome: 'claimed' });
      assert.equal(await s.completeIdempotency('write-1', 'owner', '{"result":{}}', 86_400_000), true);
    } finally {
      await s.close();
    }
    const gw = await startGateway({ upstreams: [EVERYTHING], store: { kind: 'redis', url, keyPrefix: 'noinfo-gw:', commandTimeoutMs: 2_000, ...more } });
    let ready: number;
    try {
      ready = (await fetch(`${gw.origin}/readyz`)).status;
    } finally {
      await gw.close();
    }
    const doctor = await checkStore({ kind: 'redis', url, keyPrefix: 'noinfo:', commandTimeoutMs: 2_000, ...more } as never, limits);
    return { ready, doctor, warned };
  } finally {
    console.warn = warn;
  }
}

function assertDoctorWarnsItCouldNotReadInfo(doctor: Awaited<ReturnType<typeof checkStore>>): void {
  assert.equal(doctor.verdict, 'warn', JSON.stringify(doctor));
  assert.match(doctor.detail, /could not read INFO/);
  assert.match(doctor.detail, /maxmemory-policy/);
  assert.match(doctor.hint ?? '', /\+info/);
}

describe('an ACL user without +info', () => {
  let redis: TestRedis;
  let url: string;
  before(async () => {
    redis = await startRedis();
    const admin = new Redis(redis.url);
    try {
      assert.equal(await admin.call('ACL', 'SETUSER', 'gatehouse', 'on', '>gatehouse-secret-0123456789', '~*', '&*', '+@all', '-info'), 'OK');
    } finally {
      admin.disconnect();
    }
    url = redis.url.replace('redis://', 'redis://gatehouse:gatehouse-secret-0123456789@');
  });
  after(async () => {
    await redis.stop();
  });

  test('serves, says ready, writes nothing to the console, and the doctor warns instead of failing', async () => {
    const { ready, doctor, warned } = await judge(url);
    assert.equal(ready, 200);
    assert.deepEqual(warned.filter((w) => /ready check|INFO/i.test(w)), [], 'nothing outside the structured log');
    assertDoctorWarnsItCouldNotReadInfo(doctor);
  });
});

describe('a Redis without the INFO command', () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startRedis({ config: ['rename-command INFO ""'] });
  });
  after(async () => {
    await redis.stop();
  });

  test('serves and says ready; the doctor warns instead of failing', async () => {
    const { ready, doctor } = await judge(redis.url);
    assert.equal(ready, 200);
    assertDoctorWarnsItCouldNotReadInfo(doctor);
  });
});

describe('a Redis Cluster without the INFO command', () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startRedis({ mode: 'cluster', config: ['rename-command INFO ""'] });
  });
  after(async () => {
    await redis.stop();
  });

  test('serves and says ready; the doctor warns instead of failing', async () => {
    const { ready, doctor } = await judge(redis.url, { cluster: { nodes: [`127.0.0.1:${redis.port}`] } });
    assert.equal(ready, 200);
    assertDoctorWarnsItCouldNotReadInfo(doctor);
  });
});
