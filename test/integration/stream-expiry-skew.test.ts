// A token past its `exp` but inside `auth.oauth.clockSkewSeconds` is accepted (RFC 7519 §4.1.4 allows "some
// small leeway"), so a listening stream opened with it is served until the end of that leeway, exp + skew, the
// same instant at which the token stops being accepted (2026-07-28 authorization §Token Handling: a stream is
// one request, authenticated when it opens). Until 4 December the stream's end was timed on `exp` alone: such a
// stream ended as soon as it opened, the client reconnected with the same still-accepted token, and the loop ran
// until the skew was over. Tokens come from a real JWKS issuer; the upstream is the v1 SDK's server.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startAuthServer, type AuthServer } from '../helpers/auth-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';
import { startPollingServer, type PollingServer } from '../fixtures/upstreams/polling-server.js';

const PUBLIC_URL = 'https://mcp.example.test/mcp';
const SKEW_SECONDS = 4;

let as: AuthServer;
let up: PollingServer;
let gw: TestGateway;
before(async () => {
  as = await startAuthServer();
  up = await startPollingServer();
  gw = await startGateway({
    listen: { publicUrl: PUBLIC_URL, ssePath: '/sse', allowedHosts: ['127.0.0.1', 'mcp.example.test'] },
    upstreams: [{ name: 'poll', url: up.url, era: 'legacy' }],
    auth: { failureLimit: { attempts: 0 }, oauth: { issuer: as.issuer, jwksUri: as.jwksUri, audience: PUBLIC_URL, clockSkewSeconds: SKEW_SECONDS } },
  });
});
after(async () => {
  await gw?.close();
  await up?.close();
  await as?.close();
});

/** When the last token made by tokenInSkew stops being accepted: its exp plus the skew, in ms. */
let acceptedUntil = 0;
/** A token whose `exp` passed a second or two ago: accepted for a few more seconds, thanks to the skew. */
const tokenInSkew = (): Promise<string> => {
  const exp = Math.floor(Date.now() / 1000) - 1;
  acceptedUntil = (exp + SKEW_SECONDS) * 1000;
  return as.sign({ sub: 'alice', aud: PUBLIC_URL, scope: 'mcp:tools', exp });
};
/** A token valid for a minute. */
const freshToken = (): Promise<string> => as.sign({ sub: 'alice', aud: PUBLIC_URL, scope: 'mcp:tools', exp: Math.floor(Date.now() / 1000) + 60 });

/** When the body ended (Date.now()), reading it (bounded by `ms`); undefined when it was still open then. */
async function endsWithin(body: AsyncIterable<unknown>, ms: number): Promise<number | undefined> {
  const started = Date.now();
  const it = body[Symbol.asyncIterator]();
  for (;;) {
    const left = started + ms - Date.now();
    if (left <= 0) return undefined;
    const next = await Promise.race([it.next().catch(() => ({ done: true as const, value: undefined })), new Promise<'open'>((r) => setTimeout(() => r('open'), left))]);
    if (next === 'open') return undefined;
    if (next.done) return Date.now();
  }
}

/**
 * Lived until exp + skew, not ended at once. Judged against the token's own end rather than a duration, so
 * a slow machine (a request that takes a second to be served) cannot make a stream that ran its course look
 * cut short; the timer may fire a little early by the clock's rounding.
 */
function assertLivedThroughSkew(endedAt: number | undefined): void {
  assert.ok(endedAt !== undefined, 'the stream ended when the token stopped being accepted');
  assert.ok(endedAt >= acceptedUntil - 100, `not at once, but at exp + skew: ended ${acceptedUntil - endedAt} ms before it`);
}

test('subscriptions/listen opened with a token inside the skew lives until exp + skew; then the token is refused', async () => {
  const token = await tokenInSkew();
  const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res = await request(gw.url, { method: 'POST', headers: { ...listen.headers, authorization: `Bearer ${token}` }, body: listen.body });
  assert.equal(res.statusCode, 200, 'accepted thanks to the skew');
  assertLivedThroughSkew(await endsWithin(res.body, 8_000));
  // No reconnect loop: by the time the stream ended, the same token is refused and the client must get another.
  const again = await post(gw.url, listen.body, { ...listen.headers, authorization: `Bearer ${token}` });
  assert.equal(again.status, 401);
  assert.match(again.headers['www-authenticate'] as string, /error="invalid_token"/);
});

test('a 2024-11-05 SSE connection opened with a token inside the skew lives until exp + skew', async () => {
  const res = await request(`${new URL(gw.url).origin}/sse`, { method: 'GET', headers: { accept: 'text/event-stream', authorization: `Bearer ${await tokenInSkew()}` } });
  assert.equal(res.statusCode, 200);
  assertLivedThroughSkew(await endsWithin(res.body, 8_000));
});

test('a legacy GET stream opened with a token inside the skew lives until exp + skew', async () => {
  const headers = { ...LEGACY_HEADERS, authorization: `Bearer ${await freshToken()}` };
  const init = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'skew', version: '1' } }), headers);
  const session = init.headers['mcp-session-id'] as string;
  const withSession = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), withSession);
  const res = await request(gw.url, { method: 'GET', headers: { ...withSession, accept: 'text/event-stream', authorization: `Bearer ${await tokenInSkew()}` } });
  assert.equal(res.statusCode, 200);
  assertLivedThroughSkew(await endsWithin(res.body, 8_000));
});
