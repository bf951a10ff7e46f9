// A listening stream is served no longer than the credential that opened it is valid (2026-07-28
// authorization §Token Handling: every request is authenticated, and a stream is one request). A legacy GET
// stream, a modern subscriptions/listen and a 2024-11-05 SSE connection, each opened with a JWT that expires
// two seconds later, end when it does; the client then reconnects with a fresh token. Tokens come from a real
// JWKS issuer (test/helpers/auth-server.ts); the upstream is the v1 SDK's server (polling-server.ts).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startAuthServer, type AuthServer } from '../helpers/auth-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';
import { startPollingServer, type PollingServer } from '../fixtures/upstreams/polling-server.js';

const PUBLIC_URL = 'https://mcp.example.test/mcp';

let as: AuthServer;
let up: PollingServer;
let gw: TestGateway;
before(async () => {
  as = await startAuthServer();
  up = await startPollingServer();
  gw = await startGateway({
    listen: { publicUrl: PUBLIC_URL, ssePath: '/sse', allowedHosts: ['127.0.0.1', 'mcp.example.test'] },
    upstreams: [{ name: 'poll', url: up.url, era: 'legacy' }],
    // No clock skew: a stream ends when its token stops being accepted, exp + skew (stream-expiry-skew.test.ts).
    auth: { failureLimit: { attempts: 0 }, oauth: { issuer: as.issuer, jwksUri: as.jwksUri, audience: PUBLIC_URL, clockSkewSeconds: 0 } },
  });
});
after(async () => {
  await gw?.close();
  await up?.close();
  await as?.close();
});

/** A token valid for about `seconds` more (JWT `exp` has whole seconds). */
const tokenFor = (seconds: number): Promise<string> => as.sign({ sub: 'alice', aud: PUBLIC_URL, scope: 'mcp:tools', exp: Math.floor(Date.now() / 1000) + seconds });

/** How long the body took to end, reading it (bounded by `ms`); undefined when it was still open then. */
async function endsWithin(body: AsyncIterable<unknown>, ms: number): Promise<number | undefined> {
  const started = Date.now();
  const it = body[Symbol.asyncIterator]();
  for (;;) {
    const left = started + ms - Date.now();
    if (left <= 0) return undefined;
    const next = await Promise.race([it.next().catch(() => ({ done: true as const, value: undefined })), new Promise<'open'>((r) => setTimeout(() => r('open'), left))]);
    if (next === 'open') return undefined;
    if (next.done) return Date.now() - started;
  }
}

test('a legacy GET stream ends when its token expires', async () => {
  const token = await tokenFor(60);
  const headers = { ...LEGACY_HEADERS, authorization: `Bearer ${token}` };
  const init = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'expiry', version: '1' } }), headers);
  const session = init.headers['mcp-session-id'] as string;
  const withSession = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), withSession);
  // The stream is opened with a token that has two seconds left (the session is the caller's, whatever token).
  const short = await tokenFor(2);
  const res = await request(gw.url, { method: 'GET', headers: { ...withSession, accept: 'text/event-stream', authorization: `Bearer ${short}` } });
  assert.equal(res.statusCode, 200);
  const ended = await endsWithin(res.body, 8_000);
  assert.ok(ended !== undefined, 'the stream ended');
  assert.ok(ended >= 500, `not at once: ${ended} ms`);
});

test('a modern subscriptions/listen ends when its token expires', async () => {
  const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res = await request(gw.url, { method: 'POST', headers: { ...listen.headers, authorization: `Bearer ${await tokenFor(2)}` }, body: listen.body });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-type'], 'text/event-stream');
  const ended = await endsWithin(res.body, 8_000);
  assert.ok(ended !== undefined && ended >= 500, `ended when the token expired: ${ended} ms`);
  // A fresh token listens again.
  const again = await request(gw.url, { method: 'POST', headers: { ...listen.headers, authorization: `Bearer ${await tokenFor(60)}` }, body: listen.body });
  assert.equal(again.statusCode, 200);
  assert.equal(await endsWithin(again.body, 2_500), undefined, 'a token with time left keeps its stream');
  again.body.destroy();
});

test('a 2024-11-05 SSE connection ends when its token expires', async () => {
  const res = await request(`${new URL(gw.url).origin}/sse`, { method: 'GET', headers: { accept: 'text/event-stream', authorization: `Bearer ${await tokenFor(2)}` } });
  assert.equal(res.statusCode, 200);
  const ended = await endsWithin(res.body, 8_000);
  assert.ok(ended !== undefined && ended >= 500, `ended when the token expired: ${ended} ms`);
});
