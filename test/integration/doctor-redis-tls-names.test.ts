// `gatehouse doctor`'s hint for a Redis whose certificate is trusted but holds another name than the one
// verified ("Hostname/IP does not match certificate's altnames"), a sentinel's own certificate included. It got the untrusted-certificate hint,
// "set store.tls.ca", which was right already; the name is what to change: store.tls.servername, and with
// Sentinel store.sentinel.servername for the sentinels' certificates. Real redis-server and sentinel over
// TLS, certificates made by openssl that hold DNS names only. Every configured sentinel is shaken hands
// with, not the first alone: one of two holding a certificate of another name is found whether the store came
// up through the other (a warning) or not (a failure), each by its address with its own hint.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoreConfig } from '../../src/config/types.js';
import { checkStore } from '../../src/doctor/store-checks.js';
import type { Finding } from '../../src/doctor/finding.js';
import { mtlsCertificates, startRedis, type TestRedis } from '../helpers/redis.js';
import { freePort } from '../helpers/auth-server.js';

const limits = { timeoutMs: 15_000, waitMs: 0 };

let ca: string;
let primary: TestRedis;
let sentinel: TestRedis;
/** A second sentinel of the same primary, whose certificate holds other.test, not the sentinels' name. */
let misnamed: TestRedis;

/** A certificate the test CA signed for `name` alone: no IP, so a connection to 127.0.0.1 must name it. */
function signedFor(dir: string, name: string): { cert: string; key: string } {
  const openssl = (args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`]);
  writeFileSync(join(dir, `${name}.ext`), `subjectAltName=DNS:${name}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.crt`]);
  return { cert: readFileSync(join(dir, `${name}.crt`), 'utf8'), key: readFileSync(join(dir, `${name}.key`), 'utf8') };
}

before(async () => {
  const certs = mtlsCertificates();
  ca = certs.ca;
  primary = await startRedis({ tls: signedFor(certs.dir, 'redis.test') });
  // The sentinel reaches the primary over TLS, so it needs the CA to verify it.
  sentinel = await startRedis({ mode: 'sentinel', primaryPort: primary.port, tls: signedFor(certs.dir, 'sentinel.test'), config: ['tls-replication yes', `tls-ca-cert-file ${join(certs.dir, 'ca.crt')}`] });
  // It watches no running primary: watching this one, the two sentinels would find each other through it
  // (their hellos), and ioredis, which adds the sentinels a sentinel names to its list, would then try this one
  // too in the other tests, whose rows would change with the moment it was found.
  misnamed = await startRedis({ mode: 'sentinel', primaryPort: await freePort(), tls: signedFor(certs.dir, 'other.test'), config: ['tls-replication yes', `tls-ca-cert-file ${join(certs.dir, 'ca.crt')}`] });
});
after(async () => {
  await misnamed?.stop();
  await sentinel?.stop(); // undefined when before() failed
  await primary?.stop();
});

function assertNameHint(found: Finding, names: RegExp): void {
  assert.equal(found.verdict, 'fail', JSON.stringify(found));
  assert.match(found.detail, /does not match certificate's altnames/, JSON.stringify(found));
  assert.match(found.hint ?? '', names, JSON.stringify(found));
  assert.doesNotMatch(found.hint ?? '', /store\.tls\.ca/, 'the CA is right: the name is what to change');
}

test('a trusted certificate of another name: store.tls.servername, not store.tls.ca', { timeout: 30_000 }, async () => {
  const config: StoreConfig = { kind: 'redis', url: `rediss://127.0.0.1:${primary.port}`, keyPrefix: 'doctor-names:', commandTimeoutMs: 1_000, tls: { ca } };
  const found = await checkStore(config, limits);
  assertNameHint(found, /store\.tls\.servername/);
  assert.doesNotMatch(found.hint ?? '', /store\.sentinel\.servername/, 'no Sentinel here');
});

/** The config of a Sentinel store whose sentinels are verified by their name, and its primary by `primaryName`. */
function throughSentinel(primaryName: string): StoreConfig {
  return {
    kind: 'redis',
    url: 'rediss://ignored:1',
    keyPrefix: 'doctor-names:',
    commandTimeoutMs: 1_000,
    sentinel: { name: 'primary', nodes: [`127.0.0.1:${sentinel.port}`] as [string], servername: 'sentinel.test' },
    tls: { ca, servername: primaryName },
  };
}

// The sentinels verified (their name given), the primary they name is not: its certificate holds redis.test.
// (When the sentinels' own certificate fails, ioredis keeps only "Connection is closed" of their error.)
test('with Sentinel, a primary of another name: store.tls.servername named beside store.sentinel.servername', { timeout: 60_000 }, async () => {
  assertNameHint(await checkStore(throughSentinel('elsewhere.test'), limits), /store\.tls\.servername.*store\.sentinel\.servername/);
});

test('with the names given, the same servers pass: the hint named what fixes it', { timeout: 60_000 }, async () => {
  const found = await checkStore(throughSentinel('redis.test'), limits);
  assert.notEqual(found.verdict, 'fail', JSON.stringify(found));
});

// The sentinels' own certificate holds sentinel.test; with no store.sentinel.servername they are verified
// against store.tls.servername, the primary's name. ioredis keeps none of the TLS error ("All sentinels are
// unreachable"), so doctor shakes hands with the first sentinel itself to find the cause, and names
// store.sentinel.servername.
test('with Sentinel, a sentinel certificate of another name: the handshake finds it, and store.sentinel.servername is named', { timeout: 60_000 }, async () => {
  const config: StoreConfig = {
    kind: 'redis',
    url: 'rediss://ignored:1',
    keyPrefix: 'doctor-names:',
    commandTimeoutMs: 1_000,
    sentinel: { name: 'primary', nodes: [`127.0.0.1:${sentinel.port}`] as [string] },
    tls: { ca, servername: 'redis.test' },
  };
  const found = await checkStore(config, limits);
  assertNameHint(found, /set store\.sentinel\.servername/);
  assert.match(found.detail, new RegExp(`sentinel 127\\.0\\.0\\.1:${sentinel.port} fails: .*DNS:sentinel\\.test`), 'the detail names the sentinel and the name its certificate holds');
});

/** The config of a Sentinel store asking `nodes`, the sentinels verified as sentinel.test and the primary as redis.test. */
function sentinels(nodes: [string, ...string[]]): StoreConfig {
  return {
    kind: 'redis',
    url: 'rediss://ignored:1',
    keyPrefix: 'doctor-names:',
    commandTimeoutMs: 1_000,
    sentinel: { name: 'primary', nodes, servername: 'sentinel.test' },
    tls: { ca, servername: 'redis.test' },
  };
}

// ioredis stops at the first sentinel that answers, so the store comes up; the second would be needed once
// the first is down, and its certificate would refuse the store then. Until 5 December doctor said ok.
test('a first sentinel healthy, the second holding a certificate of another name: a warning names the second, with store.sentinel.servername', { timeout: 60_000 }, async () => {
  const found = await checkStore(sentinels([`127.0.0.1:${sentinel.port}`, `127.0.0.1:${misnamed.port}`]), limits);
  assert.equal(found.verdict, 'warn', JSON.stringify(found));
  assert.match(found.detail, new RegExp(`sentinel 127\\.0\\.0\\.1:${misnamed.port} fails: .*DNS:other\\.test`), JSON.stringify(found));
  assert.doesNotMatch(found.detail, new RegExp(`:${sentinel.port}\\b`), 'the healthy sentinel is not named');
  assert.match(found.hint ?? '', new RegExp(`sentinel 127\\.0\\.0\\.1:${misnamed.port}: .*set store\\.sentinel\\.servername`), JSON.stringify(found));
  assert.deepEqual(found.data?.failingSentinels, [`127.0.0.1:${misnamed.port}`]);
});

// Until 5 December only the first sentinel was shaken hands with: down, it hid the second's certificate.
test('a first sentinel down, the second holding a certificate of another name: each is named with its own hint', { timeout: 60_000 }, async () => {
  const down = `127.0.0.1:${await freePort()}`;
  const found = await checkStore(sentinels([down, `127.0.0.1:${misnamed.port}`]), limits);
  assert.equal(found.verdict, 'fail', JSON.stringify(found));
  assert.match(found.detail, /All sentinels are unreachable/, JSON.stringify(found));
  assert.match(found.detail, new RegExp(`sentinel ${down.replace(/\./g, '\\.')} fails: .*ECONNREFUSED`), JSON.stringify(found));
  assert.match(found.detail, new RegExp(`sentinel 127\\.0\\.0\\.1:${misnamed.port} fails: .*DNS:other\\.test`), JSON.stringify(found));
  assert.match(found.hint ?? '', new RegExp(`sentinel ${down.replace(/\./g, '\\.')}: no TLS connection to the sentinel got through: check store\\.sentinel\\.nodes`), JSON.stringify(found));
  assert.match(found.hint ?? '', new RegExp(`sentinel 127\\.0\\.0\\.1:${misnamed.port}: .*set store\\.sentinel\\.servername`), JSON.stringify(found));
});

test('both sentinels healthy: no warning of them', { timeout: 60_000 }, async () => {
  const found = await checkStore(sentinels([`127.0.0.1:${sentinel.port}`, `127.0.0.1:${sentinel.port}`]), limits);
  assert.doesNotMatch(found.detail, /TLS connection to sentinel/, JSON.stringify(found));
  assert.notEqual(found.verdict, 'fail', JSON.stringify(found));
});
