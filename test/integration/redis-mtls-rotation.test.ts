// A rotated Redis client certificate (cert-manager renews the Secret; Gatehouse's watcher sees its files
// change and reloads). A reload used to leave the store as it started ("store changes take effect only after
// a restart"): every connection made after the rotation presented the old certificate, so once Redis trusted
// only the new one (or the old one expired), a dropped connection was never made again, the store stayed
// down and every governed call was refused until a restart. store.tls alone now applies to the store's next
// connections, checked first: a reload with a broken pair is refused and the running one stays.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGatewayFromConfigFile, type TestGateway } from '../helpers/gateway.js';
import { mtlsCertificates, startRedis, type TestRedis } from '../helpers/redis.js';
import { recordCall, untilServed } from '../helpers/store-outage.js';

let certs: ReturnType<typeof mtlsCertificates>;
let redis: TestRedis;
let admin: Redis;
let up: CountingUpstream;

before(async () => {
  certs = mtlsCertificates();
  redis = await startRedis({ tls: certs.server, config: ['tls-auth-clients yes', `tls-ca-cert-file ${join(certs.dir, 'ca.crt')}`] });
  // Connected before the server trusts another CA, and kept: the server checks a certificate once.
  admin = new Redis({ host: '127.0.0.1', port: redis.port, tls: { ca: certs.ca, ...certs.client }, enableReadyCheck: false, lazyConnect: true });
  await admin.connect();
  up = await startCountingUpstream('modern');
});
after(async () => {
  admin.disconnect();
  await up.close();
  await redis.stop();
});

/** A config directory whose client certificate and key are copies, to be replaced as a Secret's are. */
function configDir(): { file: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-rotation-'));
  copyFileSync(join(certs.dir, 'ca.crt'), join(dir, 'ca.crt'));
  copyFileSync(join(certs.dir, 'client.crt'), join(dir, 'tls.crt'));
  copyFileSync(join(certs.dir, 'client.key'), join(dir, 'tls.key'));
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(file, [
    `upstreams: [{ name: up, url: "${up.url}" }]`,
    'auth: { anonymous: true }',
    'listen: { host: 127.0.0.1, port: 0 }',
    'idempotency: { requireKeys: false }',
    `store: { kind: redis, url: "${redis.url}", keyPrefix: "rotation:", commandTimeoutMs: 1000, tls: { ca: "\${file:ca.crt}", cert: "\${file:tls.crt}", key: "\${file:tls.key}" } }`,
    '',
  ].join('\n'));
  return { file, dir };
}

/** Replaces the client certificate and key with the `stranger` pair (another CA signed it), as a renewal would. */
function rotate(dir: string, cert: string, key: string): void {
  copyFileSync(join(certs.dir, cert), join(dir, 'tls.crt'));
  copyFileSync(join(certs.dir, key), join(dir, 'tls.key'));
}

test('a rotated client certificate is used by the connections made after the reload: calls are served again once Redis trusts only the new one', { timeout: 90_000 }, async () => {
  const { file, dir } = configDir();
  let gw: TestGateway | undefined;
  try {
    gw = await startGatewayFromConfigFile(file);
    assert.equal((await untilServed(() => recordCall(gw!, 'before'), 30)).status, 200);

    rotate(dir, 'stranger.crt', 'stranger.key');
    // The file watch (polled every second) may take the change before this check does ('unchanged' then):
    // either way the new pair is applied by a reload, which is what is waited for.
    assert.match(await gw.gateway.checkConfigFile(), /^(changed|unchanged)$/);
    for (let i = 0; i < 50 && !gw.logs.some((l) => /new store\.tls applies/.test(String(l.msg))); i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(gw.logs.some((l) => l.msg === 'config reloaded'), JSON.stringify(gw.logs.map((l) => l.msg)));
    assert.ok(gw.logs.some((l) => /new store\.tls applies/.test(String(l.msg))), JSON.stringify(gw.logs.map((l) => l.msg)));
    assert.ok(!gw.logs.some((l) => /store changes take effect only after a restart/.test(String(l.msg))));

    // Redis now trusts only the new CA, and the gateway's connection is dropped: it must connect again.
    await admin.call('CONFIG', 'SET', 'tls-ca-cert-file', join(certs.dir, 'other-ca.crt'));
    await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    const after = await untilServed(() => recordCall(gw!, 'after'), 60);
    assert.equal(after.status, 200, after.text);
  } finally {
    await gw?.close();
    await admin.call('CONFIG', 'SET', 'tls-ca-cert-file', join(certs.dir, 'ca.crt'));
  }
});

test('a rotation to a broken pair (a key of another certificate) is refused by the reload; the running certificate stays', { timeout: 60_000 }, async () => {
  const { file, dir } = configDir();
  const gw = await startGatewayFromConfigFile(file);
  try {
    assert.equal((await untilServed(() => recordCall(gw, 'before'), 30)).status, 200);
    rotate(dir, 'client.crt', 'stranger.key');
    await gw.gateway.checkConfigFile();
    const refused = gw.logs.find((l) => l.msg === 'config reload refused; the running config stays');
    assert.match(JSON.stringify(refused?.['problems']), /store\.tls\.key: not the private key of store\.tls\.cert/, JSON.stringify(gw.logs.map((l) => l.msg)));
    // The running pair still makes connections.
    await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    assert.equal((await untilServed(() => recordCall(gw, 'after'), 60)).status, 200);
  } finally {
    await gw.close();
  }
});
