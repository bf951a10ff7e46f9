// An HTTP+SSE connection whose client left while its credential was still being checked (a JWT whose
// signing keys are being fetched) must not become a session: nobody reads it, and it would hold a slot of
// sessions.max (and of its caller's sessions.maxSsePerCaller) until the idle timeout, 30 minutes by default,
// refusing everyone else with 503 session_cap meanwhile. A dropped stream ends its session at once
// (README "A dropped stream ends the session"); one dropped before it opened must leave nothing behind.
// The key set is held on purpose (a fake JWKS endpoint) until the gateway has seen the client leave, so the
// leaving falls inside the check; the token is signed by the test authorization server. Each step waits for
// its cause (the key set asked for, the request line of the GET that ended, the debug line of its verdict),
// bounded, rather than for a time.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { freePort, startAuthServer, type AuthServer } from '../helpers/auth-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/otlp.js';
import { startModernMatrixServer } from '../fixtures/upstreams/modern-matrix-server.js';

const KEY_B = 'gh_sse_second_0123456789abcdefghijklmnopqrs';
let audience: string;

let as: AuthServer;
let slowJwks: Server;
/** Key set requests the fake endpoint has received. */
let keySetAsked = 0;
/** Answers the key set requests held so far, and every later one at once. */
let releaseKeySet!: () => void;
let up: Awaited<ReturnType<typeof startModernMatrixServer>>;
let gw: TestGateway;
before(async () => {
  as = await startAuthServer();
  const released = new Promise<void>((r) => (releaseKeySet = r));
  slowJwks = createServer((_req, res) => {
    keySetAsked++;
    void released.then(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: as.published.map((k) => k.publicJwk) })));
  });
  await new Promise<void>((r) => slowJwks.listen(0, '127.0.0.1', r));
  up = await startModernMatrixServer({ legacy: 'reject' });
  const port = await freePort();
  audience = `http://127.0.0.1:${port}/mcp`;
  gw = await startGateway({
    listen: { port, publicUrl: audience, ssePath: '/sse' },
    upstreams: [{ name: 'm', url: up.url }],
    sessions: { max: 1 },
    // The debug lines say when an SSE GET has been judged and when a session has ended.
    log: { level: 'debug' },
    auth: {
      apiKeys: [{ id: 'second', hash: hashKey(KEY_B), scopes: [] }],
      oauth: { issuer: as.issuer, audience, jwksUri: `http://127.0.0.1:${(slowJwks.address() as AddressInfo).port}/jwks` },
    },
  });
});
after(async () => {
  await gw?.close();
  await up?.close();
  slowJwks?.closeAllConnections();
  await new Promise<void>((r) => (slowJwks ? slowJwks.close(() => r()) : r()));
  await as?.close();
});

test('a client that leaves while its credential is checked leaves no session behind: the one slot stays free', async () => {
  const token = await as.sign({ sub: 'alice', aud: audience });
  const leaving = new AbortController();
  const gone = fetch(new URL('/sse', gw.origin), { headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` }, signal: leaving.signal }).catch(() => undefined);
  // The token's check waits on the key set, held until the gateway has seen the client leave.
  await waitFor('the key set to be asked for', () => (keySetAsked > 0 ? true : undefined));
  leaving.abort();
  await gone;
  await waitFor('the request line of the GET whose client left', () => gw.logs.find((l) => l.msg === 'request' && l.method === 'GET'));
  releaseKeySet();
  // The token judged: the GET either became a session (the defect) or was dropped as gone.
  await waitFor('the verdict on the GET whose client left', () => gw.logs.find((l) => l.msg === 'an SSE client left before its stream opened' || l.msg === 'sse session opened'));
  // Another caller, with the only slot of sessions.max: nobody is connected, so it is free.
  const ac = new AbortController();
  const res = await request(new URL('/sse', gw.origin), { headers: { accept: 'text/event-stream', authorization: `Bearer ${KEY_B}` }, signal: ac.signal });
  try {
    assert.equal(res.statusCode, 200, `a stream nobody opened holds the slot: ${res.statusCode}`);
  } finally {
    ac.abort();
    await res.body.dump().catch(() => {});
  }
  // The control: the same token, from a client that stays, opens its stream once the other caller's has
  // ended (the slot is free again).
  await waitFor('the other caller\'s session to end', () => gw.logs.find((l) => l.msg === 'sse session closed'));
  const stays = new AbortController();
  const opened = await request(new URL('/sse', gw.origin), { headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` }, signal: stays.signal });
  try {
    assert.equal(opened.statusCode, 200);
  } finally {
    stays.abort();
    await opened.body.dump().catch(() => {});
  }
});
