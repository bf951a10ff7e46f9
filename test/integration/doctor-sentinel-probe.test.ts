// `gatehouse doctor` asks each configured sentinel itself (src/doctor/sentinel-probe.ts), since ioredis keeps
// none of a sentinel's cause. A sentinel that accepts the TCP connection and then says nothing (a black hole:
// another service on that port, or a stalled sentinel) ran out the 3 s wait and was left out of the report,
// as if it had answered. It is now named, with a hint that it accepted but did not answer. Plain-text
// sentinels (a redis:// store) were not asked at all, only those over TLS: one down beside a healthy one left
// the row ok, and a black hole alone got the store.url hint. They are now asked a PING each, named the same
// way. Real redis-server and sentinels, over TLS (certificates made by openssl) and in plain text; the black
// hole is a plain TCP server on a free loopback port that accepts and never writes.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { StoreConfig } from '../../src/config/types.js';
import { checkStore } from '../../src/doctor/store-checks.js';
import { mtlsCertificates, startRedis, type TestRedis } from '../helpers/redis.js';
import { freePort } from '../helpers/auth-server.js';

const limits = { timeoutMs: 15_000, waitMs: 0 };

/** A loopback port that accepts connections and never writes a byte; closed (its sockets too) by close(). */
async function blackHole(): Promise<{ node: string; close(): Promise<void> }> {
  const held = new Set<Socket>();
  const server: Server = createServer((socket) => {
    held.add(socket);
    socket.on('close', () => held.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  return {
    node: `127.0.0.1:${port}`,
    close: async () => {
      for (const socket of held) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

let ca: string;
let tlsPrimary: TestRedis;
let tlsSentinel: TestRedis;
let plainPrimary: TestRedis;
let plainSentinel: TestRedis;
let hole: Awaited<ReturnType<typeof blackHole>>;
before(async () => {
  const certs = mtlsCertificates();
  ca = certs.ca;
  tlsPrimary = await startRedis({ tls: certs.server });
  // The sentinel reaches the primary over TLS, so it needs the CA to verify it.
  tlsSentinel = await startRedis({ mode: 'sentinel', primaryPort: tlsPrimary.port, tls: certs.server, config: ['tls-replication yes', `tls-ca-cert-file ${join(certs.dir, 'ca.crt')}`] });
  plainPrimary = await startRedis();
  plainSentinel = await startRedis({ mode: 'sentinel', primaryPort: plainPrimary.port });
  hole = await blackHole();
});
after(async () => {
  await hole?.close(); // undefined when before() failed
  await plainSentinel?.stop();
  await plainPrimary?.stop();
  await tlsSentinel?.stop();
  await tlsPrimary?.stop();
});

function overTls(nodes: [string, ...string[]]): StoreConfig {
  return { kind: 'redis', url: 'rediss://ignored:1', keyPrefix: 'doctor-probe:', commandTimeoutMs: 1_000, sentinel: { name: 'primary', nodes }, tls: { ca } };
}

function assertSilentNamed(text: string, hint: string | undefined): void {
  assert.match(text, new RegExp(`sentinel ${escaped(hole.node)} fails: it accepted the connection but did not answer within 3 s`), text);
  assert.match(hint ?? '', new RegExp(`sentinel ${escaped(hole.node)}: .*accepted the connection but did not answer within 3 s.*another service may hold that port`), hint);
}

test('over TLS, the only sentinel a black hole: the failure names it, with its hint', { timeout: 60_000 }, async () => {
  const found = await checkStore(overTls([hole.node]), limits);
  assert.equal(found.verdict, 'fail', JSON.stringify(found));
  assertSilentNamed(found.detail, found.hint);
});

test('over TLS, a healthy sentinel and a black hole: the store comes up, and a warning names the black hole', { timeout: 60_000 }, async () => {
  const found = await checkStore(overTls([`127.0.0.1:${tlsSentinel.port}`, hole.node]), limits);
  assert.equal(found.verdict, 'warn', JSON.stringify(found));
  assertSilentNamed(found.detail, found.hint);
  assert.doesNotMatch(found.detail, new RegExp(`:${tlsSentinel.port}\\b`), 'the healthy sentinel is not named');
  assert.deepEqual(found.data?.failingSentinels, [hole.node]);
});

function inPlainText(nodes: [string, ...string[]]): StoreConfig {
  return { kind: 'redis', url: 'redis://ignored:1', keyPrefix: 'doctor-probe:', commandTimeoutMs: 1_000, sentinel: { name: 'primary', nodes } };
}

test('in plain text, a sentinel down beside a healthy one: a warning names it, with the plain-text hint', { timeout: 60_000 }, async () => {
  const down = `127.0.0.1:${await freePort()}`;
  const found = await checkStore(inPlainText([down, `127.0.0.1:${plainSentinel.port}`]), limits);
  assert.equal(found.verdict, 'warn', JSON.stringify(found));
  assert.match(found.detail, new RegExp(`but a connection to sentinel ${escaped(down)} fails: .*ECONNREFUSED`), found.detail);
  assert.doesNotMatch(found.detail, /TLS connection/, 'asked in plain text');
  assert.doesNotMatch(found.detail, new RegExp(`:${plainSentinel.port}\\b`), 'the healthy sentinel is not named');
  assert.match(found.hint ?? '', new RegExp(`sentinel ${escaped(down)}: no connection to the sentinel got through: check store\\.sentinel\\.nodes .*plain text`), found.hint);
  assert.deepEqual(found.data?.failingSentinels, [down]);
});

test('in plain text, a black hole and a sentinel down: the failure names each, with its own hint', { timeout: 60_000 }, async () => {
  const down = `127.0.0.1:${await freePort()}`;
  const found = await checkStore(inPlainText([hole.node, down]), limits);
  assert.equal(found.verdict, 'fail', JSON.stringify(found));
  assertSilentNamed(found.detail, found.hint);
  assert.match(found.detail, new RegExp(`a connection to sentinel ${escaped(down)} fails: .*ECONNREFUSED`), found.detail);
  assert.match(found.hint ?? '', new RegExp(`sentinel ${escaped(down)}: no connection to the sentinel got through`), found.hint);
});

test('in plain text, both sentinels healthy: the row is ok and names no sentinel', { timeout: 60_000 }, async () => {
  const healthy = `127.0.0.1:${plainSentinel.port}`;
  const found = await checkStore(inPlainText([healthy, healthy]), limits);
  assert.equal(found.verdict, 'ok', JSON.stringify(found));
  assert.doesNotMatch(found.detail, /connection to sentinel/, found.detail);
});
