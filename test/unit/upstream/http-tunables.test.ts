// A reload that changes a Streamable HTTP upstream's `pool` or connection timeouts replaces its undici pool
// for new requests (http-tunables.ts); the old one drains: a request still on it finishes on its own
// connection, the old pool takes nothing new, and its connection closes once that request has ended, not
// before and not never. One whose options did not change is kept, with its connections. A request that never
// ends (an upstream that keeps its stream alive with comments) holds the old pool only until the longest call
// limit of before the reload has passed. Against a real node:http server on loopback, which tells the
// connections apart.

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
    else if (req.url === '/stall') keepAlive(res);
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

/** An event stream that never ends: a comment every 50 ms, so no body timeout ever fires, until the client goes. */
function keepAlive(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(': open\n\n');
  const beat = setInterval(() => res.write(': alive\n\n'), 50);
  res.on('close', () => clearInterval(beat));
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

test('a replaced pool still carrying a stream that never ends is destroyed once the longest call limit of before has passed', { timeout: 15_000 }, async () => {
  const server = await startServer();
  const tunables = new HttpTunables(entry(server.url, { pool: { connections: 4 }, timeouts: { callMs: 300 } }), 16);
  cleanups.push(() => tunables.close());
  const before = tunables.calls;
  const { body } = await before.request({ path: '/stall', method: 'GET' });
  const ended = (async () => {
    for await (const chunk of body) void chunk;
  })();
  const stalledSocket = server.socketOf.get('/stall');
  assert.ok(stalledSocket, 'the stream reached the server');
  const open = (): number => server.sockets.filter((s) => !s.destroyed).length;
  assert.equal(open(), 1);

  // The new limits are longer: the old pool's requests went up with 300 ms, and that bounds its draining.
  tunables.apply(entry(server.url, { pool: { connections: 2 }, timeouts: { callMs: 600_000 } }));
  assert.equal(tunables.drainingPools, 1, 'the old pool drains');
  // Bounded: a stream the deadline did not end is still open after 5 s.
  const outcome = await Promise.race([ended.then(() => 'ended cleanly', (err: unknown) => err), sleep(5_000).then(() => 'still open')]);
  assert.ok(outcome instanceof Error, `the stream ends with an error, not: ${String(outcome)}`);
  assert.equal((outcome as Error & { code?: string }).code, 'GW_ERR_UPSTREAM_TIMEOUT');
  assert.match(outcome.message, /replaced was closed after draining for 300 ms/, 'which says why');
  // Bounded wait for the server to see its side of the connection close.
  for (let i = 0; i < 100 && (open() > 0 || tunables.drainingPools > 0); i++) await sleep(20);
  assert.equal(stalledSocket.destroyed, true, 'the old pool\'s socket is closed');
  assert.equal(open(), 0, 'no connection is left open at the server');
  assert.equal(tunables.drainingPools, 0, 'and the old pool is let go');
});
