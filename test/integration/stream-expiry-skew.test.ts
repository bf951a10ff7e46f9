// A token past its `exp` but inside `auth.oauth.clockSkewSeconds` is accepted (RFC 7519 §4.1.4 allows "some
// small leeway"), so a listening stream opened with it is served until the end of that leeway, exp + skew, the
// same instant at which the token stops being accepted (2026-07-28 authorization §Token Handling: a stream is
// one request, authenticated when it opens). Until 4 December the stream's end was timed on `exp` alone: such a
// stream ended as soon as it opened, the client reconnected with the same still-accepted token, and the loop ran
// until the skew was over. Tokens come from a real JWKS issuer; the upstream is the v1 SDK's server.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import type { TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { openLegacyGetStream, startJwtStreamGateway, type JwtStreamGateway } from '../helpers/jwt-stream-gateway.js';
import { msUntilBodyEnds } from '../helpers/sse.js';

const SKEW_SECONDS = 4;

let setup: JwtStreamGateway;
let gw: TestGateway;
before(async () => {
  setup = await startJwtStreamGateway({ clockSkewSeconds: SKEW_SECONDS });
  gw = setup.gw;
});
after(() => setup?.close());

/** No earlier than when the last token made by tokenInSkew stops being accepted: its exp plus the skew, in ms. */
let acceptedUntil = 0;
/** A token whose `exp` passed a second or two ago: accepted for a few more seconds, thanks to the skew. */
const tokenInSkew = (): Promise<string> => {
  // Read before the token's own exp is: a second boundary crossed in between only makes this earlier.
  acceptedUntil = (Math.floor(Date.now() / 1000) - 1 + SKEW_SECONDS) * 1000;
  return setup.tokenExpiringIn(-1);
};
/** A token valid for a minute. */
const freshToken = (): Promise<string> => setup.tokenExpiringIn(60);

/**
 * Lived until exp + skew, not ended at once. Judged against the token's own end rather than a duration, so
 * a slow machine (a request that takes a second to be served) cannot make a stream that ran its course look
 * cut short; the timer may fire a little early by the clock's rounding.
 */
function assertLivedThroughSkew(endedAfterMs: number | undefined): void {
  assert.ok(endedAfterMs !== undefined, 'the stream ended when the token stopped being accepted');
  // Called as soon as the body ended: now is when it ended.
  const endedAt = Date.now();
  assert.ok(endedAt >= acceptedUntil - 100, `not at once, but at exp + skew: ended ${acceptedUntil - endedAt} ms before it`);
}

test('subscriptions/listen opened with a token inside the skew lives until exp + skew; then the token is refused', async () => {
  const token = await tokenInSkew();
  const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res = await request(gw.url, { method: 'POST', headers: { ...listen.headers, authorization: `Bearer ${token}` }, body: listen.body });
  assert.equal(res.statusCode, 200, 'accepted thanks to the skew');
  assertLivedThroughSkew(await msUntilBodyEnds(res.body, 8_000));
  // No reconnect loop: by the time the stream ended, the same token is refused and the client must get another.
  const again = await post(gw.url, listen.body, { ...listen.headers, authorization: `Bearer ${token}` });
  assert.equal(again.status, 401);
  assert.match(again.headers['www-authenticate'] as string, /error="invalid_token"/);
});

test('a 2024-11-05 SSE connection opened with a token inside the skew lives until exp + skew', async () => {
  const res = await request(`${new URL(gw.url).origin}/sse`, { method: 'GET', headers: { accept: 'text/event-stream', authorization: `Bearer ${await tokenInSkew()}` } });
  assert.equal(res.statusCode, 200);
  assertLivedThroughSkew(await msUntilBodyEnds(res.body, 8_000));
});

test('a legacy GET stream opened with a token inside the skew lives until exp + skew', async () => {
  const res = await openLegacyGetStream(gw, await freshToken(), tokenInSkew, 'skew');
  assert.equal(res.statusCode, 200);
  assertLivedThroughSkew(await msUntilBodyEnds(res.body, 8_000));
});
