// `gatehouse doctor`'s store finding for a Redis that fails: what to do depends on why. Every failure got
// one hint, "check store.url (host, port, password, database) and that this user may write keys under
// store.keyPrefix": for a full Redis (OOM), a read-only replica (READONLY) or a certificate the store does
// not trust, none of which store.url can fix, and for a wrong password without saying the password was
// the problem. The hint now follows the cause Redis (or the connection) gave.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { checkStore } from '../../src/doctor/store-checks.js';
import type { Finding } from '../../src/doctor/finding.js';
import { startRedis, testCertificates, type TestRedis } from '../helpers/redis.js';

const limits = { timeoutMs: 8_000, waitMs: 0 };

let redis: TestRedis;
let secured: TestRedis;
let tls: TestRedis;
let raw: Redis;
before(async () => {
  redis = await startRedis();
  secured = await startRedis({ password: 'the-right-one' });
  tls = await startRedis({ tls: testCertificates() });
  raw = new Redis(redis.url);
});
after(async () => {
  raw.disconnect();
  await redis.stop();
  await secured.stop();
  await tls.stop();
});

function check(url: string): Promise<Finding> {
  return checkStore({ kind: 'redis', url, keyPrefix: 'doctor-hints:', commandTimeoutMs: 1_000 }, limits);
}

function assertFails(found: Finding, detail: RegExp, hint: RegExp): void {
  assert.equal(found.verdict, 'fail', JSON.stringify(found));
  assert.match(found.detail, detail, JSON.stringify(found));
  assert.match(found.hint ?? '', hint, JSON.stringify(found));
}

test('a full Redis (OOM): more memory, not store.url', async () => {
  await raw.config('SET', 'maxmemory', '1');
  try {
    assertFails(await check(redis.url), /OOM/, /full.*maxmemory/);
  } finally {
    await raw.config('SET', 'maxmemory', '0');
  }
});

test('a read-only replica (READONLY): point store.url at the primary', async () => {
  const primary = await startRedis();
  await raw.call('REPLICAOF', '127.0.0.1', String(primary.port));
  try {
    assertFails(await check(redis.url), /READONLY/, /replica.*primary/);
  } finally {
    await raw.call('REPLICAOF', 'NO', 'ONE');
    await primary.stop();
  }
});

test('a wrong password (WRONGPASS): the password in store.url', async () => {
  assertFails(await check(`redis://:not-it@127.0.0.1:${secured.port}`), /WRONGPASS/, /password.*store\.url/);
});

test('no password where Redis requires one (NOAUTH): a password in store.url', async () => {
  assertFails(await check(`redis://127.0.0.1:${secured.port}`), /NOAUTH/, /password.*store\.url/);
});

test('a certificate the store does not trust: store.tls.ca', async () => {
  assertFails(await check(tls.url), /certificate/, /store\.tls\.ca/);
});

test('nothing listens there: is Redis up, and the host and port', async () => {
  assertFails(await check('redis://127.0.0.1:1'), /ECONNREFUSED/, /Redis up.*host and port/);
});

// Redis' own default with TLS is tls-auth-clients yes: it asks every client for a certificate, which the
// store has none of to give. The certificate hint (store.tls.ca) was wrong for it: the server's certificate
// was trusted; the server refused the client.
test('a Redis that asks for a client certificate: not store.tls.ca, but tls-auth-clients on the server', { timeout: 30_000 }, async () => {
  const certs = testCertificates();
  const caFile = join(mkdtempSync(join(tmpdir(), 'gatehouse-client-ca-')), 'ca.crt');
  writeFileSync(caFile, certs.ca);
  const mtls = await startRedis({ tls: certs, config: ['tls-auth-clients yes', `tls-ca-cert-file ${caFile}`] });
  try {
    const found = await checkStore({ kind: 'redis', url: mtls.url, keyPrefix: 'doctor-hints:', commandTimeoutMs: 1_000, tls: { ca: certs.ca } }, limits);
    // The server's alert, or the reset that follows it, whichever the store read last.
    assertFails(found, /certificate required|ECONNRESET|EPIPE/, /client certificate.*tls-auth-clients/);
    assert.doesNotMatch(found.hint ?? '', /store\.tls\.ca/);
  } finally {
    await mtls.stop();
  }
});
