// Sentinel with rediss://: the primary was reached over TLS, but the sentinels were asked in the clear, so
// store.sentinel.password crossed the network readable, and sentinels that listen on a TLS port only (as
// the primary does) could not be asked at all: the store never came up. The sentinels are now asked over
// TLS, with store.tls (CA, client certificate) as the primary is. Real redis-server and sentinel, TLS
// only, both asking for client certificates; certificates made by openssl.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openStore } from '../../src/store/open-store.js';
import { mtlsCertificates, startRedis, type TestRedis } from '../helpers/redis.js';

let certs: ReturnType<typeof mtlsCertificates>;
let primary: TestRedis;
let sentinel: TestRedis;
before(async () => {
  certs = mtlsCertificates();
  const mutual = ['tls-auth-clients yes', `tls-ca-cert-file ${join(certs.dir, 'ca.crt')}`];
  primary = await startRedis({ tls: certs.server, config: mutual });
  // tls-replication: the sentinel reaches the primary over TLS, presenting its own certificate.
  sentinel = await startRedis({ mode: 'sentinel', primaryPort: primary.port, tls: certs.server, config: [...mutual, 'tls-replication yes'] });
});
after(async () => {
  await sentinel.stop();
  await primary.stop();
});

test('through sentinels that listen on TLS only and ask for client certificates, the store works', { timeout: 60_000 }, async () => {
  const store = openStore({
    kind: 'redis',
    url: 'rediss://ignored:1',
    keyPrefix: 'sentinel-tls:',
    commandTimeoutMs: 2_000,
    sentinel: { name: 'primary', nodes: [`127.0.0.1:${sentinel.port}`] },
    tls: { ca: certs.ca, ...certs.client },
  });
  try {
    await store.ping();
    assert.equal((await store.addToWindow('w', 3, 60_000)).total, 3);
  } finally {
    await store.close();
  }
});

test('without a client certificate, the sentinels and the primary refuse the store: it is unavailable', { timeout: 60_000 }, async () => {
  const store = openStore({ kind: 'redis', url: 'rediss://ignored:1', keyPrefix: 'sentinel-tls:', commandTimeoutMs: 1_000, sentinel: { name: 'primary', nodes: [`127.0.0.1:${sentinel.port}`] }, tls: { ca: certs.ca } });
  try {
    await assert.rejects(store.ping(), { name: 'StoreUnavailableError' });
  } finally {
    await store.close();
  }
});
