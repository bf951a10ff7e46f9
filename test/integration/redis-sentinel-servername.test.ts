// Sentinels and the primary with certificates of different names. store.tls.servername served both, so when
// the primary's certificate held redis.test (it is reached at the IP the sentinels give) and the sentinels'
// held sentinel.test, no single name verified both and the store never came up. store.sentinel.servername
// now names the sentinels apart; store.tls.servername then serves the primary alone. A reload's new store.tls
// reaches the sentinels' connections as well as the primary's. Real redis-server and sentinel, TLS only,
// both asking for client certificates; certificates made by openssl.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfigText } from '../../src/config/load.js';
import { unsupportedFeatures } from '../../src/config/semantic-checks.js';
import type { StoreConfig } from '../../src/config/types.js';
import { openStore } from '../../src/store/open-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { mtlsCertificates, startRedis, type TestRedis } from '../helpers/redis.js';

let certs: ReturnType<typeof mtlsCertificates>;
let primary: TestRedis;
let sentinel: TestRedis;

before(async () => {
  certs = mtlsCertificates();
  // The sentinel's certificate holds sentinel.test alone: not the primary's name, nor the IP connected to.
  const openssl = (args: string[]): void => void execFileSync('openssl', args, { cwd: certs.dir, stdio: ['ignore', 'ignore', 'pipe'] });
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=sentinel.test', '-keyout', 'sentinel.key', '-out', 'sentinel.csr']);
  writeFileSync(join(certs.dir, 'sentinel.ext'), 'subjectAltName=DNS:sentinel.test\nextendedKeyUsage=serverAuth,clientAuth\n');
  openssl(['x509', '-req', '-in', 'sentinel.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'sentinel.ext', '-out', 'sentinel.crt']);
  const sentinelPair = { cert: readFileSync(join(certs.dir, 'sentinel.crt'), 'utf8'), key: readFileSync(join(certs.dir, 'sentinel.key'), 'utf8') };
  const mutual = ['tls-auth-clients yes', `tls-ca-cert-file ${join(certs.dir, 'ca.crt')}`];
  primary = await startRedis({ tls: certs.server, config: mutual });
  sentinel = await startRedis({ mode: 'sentinel', primaryPort: primary.port, tls: sentinelPair, config: [...mutual, 'tls-replication yes'] });
});
after(async () => {
  await sentinel.stop();
  await primary.stop();
});

function storeConfig(tls: { ca: string; cert?: string; key?: string; servername?: string }, sentinelServername?: string): StoreConfig {
  return {
    kind: 'redis',
    url: 'rediss://ignored:1',
    keyPrefix: 'sentinel-servername:',
    commandTimeoutMs: 1_000,
    sentinel: { name: 'primary', nodes: [`127.0.0.1:${sentinel.port}`] as [string], ...(sentinelServername !== undefined ? { servername: sentinelServername } : {}) },
    tls,
  };
}

describe('store.sentinel.servername', () => {
  test('the sentinels are verified against their name, the primary against store.tls.servername: the store works', { timeout: 60_000 }, async () => {
    const store = openStore(storeConfig({ ca: certs.ca, ...certs.client, servername: 'redis.test' }, 'sentinel.test'));
    try {
      await store.ping();
      assert.equal((await store.addToWindow('w', 2, 60_000)).total, 2);
    } finally {
      await store.close();
    }
  });

  test("without it, store.tls.servername is asked of the sentinels too, whose certificate lacks it: the store is unavailable", { timeout: 60_000 }, async () => {
    const store = openStore(storeConfig({ ca: certs.ca, ...certs.client, servername: 'redis.test' }));
    try {
      await assert.rejects(store.ping(), { name: 'StoreUnavailableError' });
    } finally {
      await store.close();
    }
  });

  test("a reload's store.tls (the client certificate added) reaches the sentinels' connections too", { timeout: 60_000 }, async () => {
    const store = openStore(storeConfig({ ca: certs.ca, servername: 'redis.test' }, 'sentinel.test'));
    assert.ok(store instanceof RedisStore);
    try {
      await assert.rejects(store.ping(), { name: 'StoreUnavailableError' }, 'the sentinel refuses a connection without a client certificate');
      store.useTls({ ca: certs.ca, ...certs.client, servername: 'redis.test' });
      let answered = false;
      for (let i = 0; i < 60 && !answered; i++) {
        answered = await store.ping().then(
          () => true,
          () => false,
        );
        if (!answered) await new Promise((r) => setTimeout(r, 250));
      }
      assert.ok(answered, 'the store came up with the new client certificate on the sentinels and the primary');
    } finally {
      await store.close();
    }
  });

  test('with redis:// it is a config problem, as store.tls is', () => {
    const config = parseConfigText(
      ['upstreams: [{ name: up, url: "http://127.0.0.1:9/mcp" }]', 'auth: { anonymous: true }', 'store:', '  kind: redis', '  url: "redis://127.0.0.1:6379"', '  sentinel: { name: primary, nodes: ["127.0.0.1:26379"], servername: sentinel.test }', ''].join('\n'),
      { fileName: 'gatehouse.yaml', baseDir: certs.dir, env: {} },
    );
    assert.deepEqual(unsupportedFeatures(config), ['store.sentinel.servername: applies to TLS connections only; write the URL as rediss://']);
  });
});
