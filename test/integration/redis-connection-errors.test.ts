// Why the Redis store cannot connect, said in its errors: a wrong password (WRONGPASS), a certificate
// the store does not trust, a certificate for another name, rediss:// to a plain port. The store runs
// without ioredis' offline queue (commands fail at once while it is not connected), so every operation
// failed with ioredis' own words, "Stream isn't writeable and enableOfflineQueue options is false": the
// gateway's log line, `gatehouse doctor`'s store finding and every refused call's cause named an option
// the operator never set and said nothing of the password or certificate that was wrong. The cause the
// connection met is now kept and given, without the password.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkStore } from '../../src/doctor/store-checks.js';
import { startCountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway } from '../helpers/gateway.js';
import { recordCall } from '../helpers/store-outage.js';
import { openStore } from '../../src/store/open-store.js';
import { startRedis, testCertificates, type TestRedis } from '../helpers/redis.js';

const PASSWORD = 'right-pw-7d1f';
const WRONG = 'wrong-pw-91c3';

let secured: TestRedis;
let tls: TestRedis;
let plain: TestRedis;
let certs: ReturnType<typeof testCertificates>;
before(async () => {
  certs = testCertificates();
  secured = await startRedis({ password: PASSWORD });
  tls = await startRedis({ tls: { cert: certs.cert, key: certs.key } });
  plain = await startRedis();
});
after(async () => {
  await secured.stop();
  await tls.stop();
  await plain.stop();
});

async function pingError(config: { url: string; tls?: { ca: string } }): Promise<Error> {
  const s = openStore({ kind: 'redis', keyPrefix: 'conn:', commandTimeoutMs: 1_000, ...config });
  try {
    await s.ping();
  } catch (err) {
    return err as Error;
  } finally {
    await s.close();
  }
  throw new Error('the ping was answered');
}

function assertSays(err: Error, cause: RegExp): void {
  assert.equal(err.name, 'StoreUnavailableError');
  assert.match(err.message, cause);
  assert.doesNotMatch(err.message, /enableOfflineQueue/, 'ioredis option names are no cause');
  assert.ok(!err.message.includes(WRONG) && !err.message.includes(PASSWORD), `no password in the message: ${err.message}`);
}

describe('the store says why it is not connected', () => {
  test('a wrong password: WRONGPASS', async () => {
    assertSays(await pingError({ url: `redis://:${WRONG}@127.0.0.1:${secured.port}` }), /not connected to Redis.*WRONGPASS/);
  });

  test('a wrong user name and password: WRONGPASS', async () => {
    assertSays(await pingError({ url: `redis://bob:${WRONG}@127.0.0.1:${secured.port}` }), /not connected to Redis.*WRONGPASS/);
  });

  test('no password where one is required: NOAUTH', async () => {
    assertSays(await pingError({ url: `redis://127.0.0.1:${secured.port}` }), /NOAUTH/);
  });

  test('a certificate from a CA the store does not trust', async () => {
    assertSays(await pingError({ url: tls.url }), /not connected to Redis.*certificate/i);
  });

  test('a certificate for another name', async () => {
    assertSays(await pingError({ url: `rediss://localhost:${tls.port}`, tls: { ca: certs.ca } }), /not connected to Redis.*(localhost|altnames|Hostname)/i);
  });

  test('rediss:// to a port that speaks plain Redis', async () => {
    assertSays(await pingError({ url: `rediss://127.0.0.1:${plain.port}` }), /not connected to Redis: \S/);
  });

  test('redis:// to a port that speaks TLS only', async () => {
    assertSays(await pingError({ url: `redis://127.0.0.1:${tls.port}` }), /not connected to Redis: \S/);
  });
});

test('gatehouse doctor names WRONGPASS in its store finding, and not the password', { timeout: 30_000 }, async () => {
  const found = await checkStore({ kind: 'redis', url: `redis://:${WRONG}@127.0.0.1:${secured.port}`, keyPrefix: 'doctor:', commandTimeoutMs: 1_000 }, { timeoutMs: 5_000, waitMs: 0 });
  assert.equal(found.verdict, 'fail');
  assert.match(found.detail, /WRONGPASS/, found.detail);
  assert.doesNotMatch(found.detail, /enableOfflineQueue/);
  assert.ok(!JSON.stringify(found).includes(WRONG), `no password in the finding: ${JSON.stringify(found)}`);
});

test("the gateway's log says the store is unavailable because of WRONGPASS, and holds the password nowhere", { timeout: 30_000 }, async () => {
  const up = await startCountingUpstream('modern');
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'redis', url: `redis://:${WRONG}@127.0.0.1:${secured.port}`, keyPrefix: 'gw:', commandTimeoutMs: 1_000 } });
  try {
    const refused = await recordCall(gw, 'x');
    assert.equal(refused.status, 503, refused.text);
    const down = gw.logs.find((l) => l.msg === 'the store is unavailable: governed calls are refused until it is back');
    assert.match(String(down?.err), /not connected to Redis: WRONGPASS/, JSON.stringify(down));
    assert.ok(!JSON.stringify(gw.logs).includes(WRONG), 'no log line holds the password');
    assert.ok(!refused.text.includes(WRONG), 'nor does the answer');
  } finally {
    await gw.close();
    await up.close();
  }
});
