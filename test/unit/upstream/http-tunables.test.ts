// A reload that changes a Streamable HTTP upstream's `pool` or connection timeouts replaces its undici pool
// for new requests (http-tunables.ts); the old one drains: a request still on it finishes on its own
// connection, the old pool takes nothing new, and its connection closes once that request has ended, not
// before and not never. One whose options did not change is kept, with its connections. Against a real
// node:http server on loopback, which tells the connections apart.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HttpUpstreamConfig } from '../../../src/config/types.js';
import { validateConfigObject } from '../../../src/config/load.js';
import { HttpTunables } from '../../../src/upstream/http-tunables.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

/** A server that answers /quick at once and holds /hold until `release`; it numbers its connections. */
async function startServer(): Promise<{ url: string; sockets: Socket[]; socketOf: Map<string, Socket>; release(): void }> {
  const sockets: Socket[] = [];
  const socketOf = new Map<string, Socket>();
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    socketOf.set(req.url ?? '', req.socket);
    if (req.url === '/hold') held.push(res);
    else res.end('quick');
  });
  server.on('connection', (s: Socket) => sockets.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    sockets,
    socketOf,
    release: () => {
      for (const res of held.splice(0)) res.end('held');
    },
  };
}

function entry(url: string, tunables: Record<string, unknown>): HttpUpstreamConfig {
  return validateConfigObject({ upstreams: [{ name: 'up', url, transport: 'streamableHttp', ...tunables }] }).upstreams[0] as HttpUpstreamConfig;
}

async function get(pool: HttpTunables['calls'], path: string): Promise<string> {
  const { body } = await pool.request({ path, method: 'GET' });
  return body.text();
}

test('a changed pool is replaced for new requests; the old one finishes its request, then closes its connection', { timeout: 15_000 }, async () => {
  const server = await startServer();
  const tunables = new HttpTunables(entry(server.url, { pool: { connections: 4 } }), 16);
  cleanups.push(() => tunables.close());
  const before = tunables.calls;
  const streamsBefore = tunables.streams;
  const held = get(before, '/hold');
  // Bounded wait for the held request to reach the server.
  for (let i = 0; i < 100 && !server.socketOf.has('/hold'); i++) await sleep(20);
  const heldSocket = server.socketOf.get('/hold');
  assert.ok(heldSocket, 'the held request reached the server');

  tunables.apply(entry(server.url, { pool: { connections: 2 } }));
  assert.notEqual(tunables.calls, before, 'new requests get a new pool');
  assert.equal(tunables.streams, streamsBefore, 'the streams\' pool, as large as sessions.max (16) before and after, is kept');
  assert.equal(tunables.drainingPools, 1, 'the calls\' old pool drains');
  assert.equal(await get(tunables.calls, '/quick'), 'quick');
  assert.notEqual(server.socketOf.get('/quick'), heldSocket, 'the new pool opened a connection of its own');
  await assert.rejects(get(before, '/quick'), 'the old pool takes nothing new');
  assert.equal(heldSocket.destroyed, false, 'the old pool\'s connection stays while its request runs');

  server.release();
  assert.equal(await held, 'held', 'the request in flight finished on the old pool');
  for (let i = 0; i < 100 && (!heldSocket.destroyed || tunables.drainingPools > 0); i++) await sleep(20);
  assert.equal(heldSocket.destroyed, true, 'the old pool closed its connection once its request had ended');
  assert.equal(tunables.drainingPools, 0, 'and is let go');
});

test('a reload that leaves the pool\'s options as they were keeps the pools; one of timeouts.tools alone changes only the tool limits', { timeout: 15_000 }, async () => {
  const server = await startServer();
  const tunables = new HttpTunables(entry(server.url, {}), 16);
  cleanups.push(() => tunables.close());
  const { calls, streams } = tunables;
  const buildLimit = (): number | undefined => tunables.toolTimeout?.('build');
  assert.equal(buildLimit(), undefined);
  tunables.apply(entry(server.url, { timeouts: { tools: { build: 60_000 } }, maxSessions: 3 }));
  assert.equal(tunables.calls, calls);
  assert.equal(tunables.streams, streams);
  assert.equal(tunables.drainingPools, 0);
  assert.equal(buildLimit(), 60_000, 'the new tool limit is in force');
  tunables.apply(entry(server.url, { timeouts: { bodyMs: 1_000 } }));
  assert.notEqual(tunables.calls, calls, 'a new body timeout is a new pool option');
  assert.equal(tunables.bodyMs, 1_000);
  assert.equal(buildLimit(), undefined, 'the tool limit left out is gone');
});
