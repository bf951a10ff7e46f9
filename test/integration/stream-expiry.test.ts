// A listening stream is served no longer than the credential that opened it is valid (2026-07-28
// authorization §Token Handling: every request is authenticated, and a stream is one request). A legacy GET
// stream, a modern subscriptions/listen and a 2024-11-05 SSE connection, each opened with a JWT that expires
// two seconds later, end when it does; the client then reconnects with a fresh token. Tokens come from a real
// JWKS issuer (test/helpers/auth-server.ts); the upstream is the v1 SDK's server (polling-server.ts).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import type { TestGateway } from '../helpers/gateway.js';
import { modernRequest } from '../helpers/http.js';
import { openLegacyGetStream, startJwtStreamGateway, type JwtStreamGateway } from '../helpers/jwt-stream-gateway.js';
import { msUntilBodyEnds } from '../helpers/sse.js';

let setup: JwtStreamGateway;
let gw: TestGateway;
before(async () => {
  // No clock skew: a stream ends when its token stops being accepted, exp + skew (stream-expiry-skew.test.ts).
  setup = await startJwtStreamGateway({ clockSkewSeconds: 0 });
  gw = setup.gw;
});
after(() => setup?.close());

/** A token valid for about `seconds` more (JWT `exp` has whole seconds). */
const tokenFor = (seconds: number): Promise<string> => setup.tokenExpiringIn(seconds);

test('a legacy GET stream ends when its token expires', async () => {
  // The stream is opened with a token that has two seconds left (the session is the caller's, whatever token).
  const res = await openLegacyGetStream(gw, await tokenFor(60), () => tokenFor(2), 'expiry');
  assert.equal(res.statusCode, 200);
  const ended = await msUntilBodyEnds(res.body, 8_000);
  assert.ok(ended !== undefined, 'the stream ended');
  assert.ok(ended >= 500, `not at once: ${ended} ms`);
});

test('a modern subscriptions/listen ends when its token expires', async () => {
  const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res = await request(gw.url, { method: 'POST', headers: { ...listen.headers, authorization: `Bearer ${await tokenFor(2)}` }, body: listen.body });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-type'], 'text/event-stream');
  const ended = await msUntilBodyEnds(res.body, 8_000);
  assert.ok(ended !== undefined && ended >= 500, `ended when the token expired: ${ended} ms`);
  // A fresh token listens again.
  const again = await request(gw.url, { method: 'POST', headers: { ...listen.headers, authorization: `Bearer ${await tokenFor(60)}` }, body: listen.body });
  assert.equal(again.statusCode, 200);
  assert.equal(await msUntilBodyEnds(again.body, 2_500), undefined, 'a token with time left keeps its stream');
  again.body.destroy();
});

test('a 2024-11-05 SSE connection ends when its token expires', async () => {
  const res = await request(`${new URL(gw.url).origin}/sse`, { method: 'GET', headers: { accept: 'text/event-stream', authorization: `Bearer ${await tokenFor(2)}` } });
  assert.equal(res.statusCode, 200);
  const ended = await msUntilBodyEnds(res.body, 8_000);
  assert.ok(ended !== undefined && ended >= 500, `ended when the token expired: ${ended} ms`);
});
