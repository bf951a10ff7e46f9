// A modern subscriptions/listen in front of a legacy upstream is fed by the pooled session's GET stream
// (GATEWAY-REQUIREMENTS §16.1 "Subscriptions ⇄ GET stream"). A server restarted since the session was opened
// answers that GET for the session it forgot with 404 (2025-11-25/basic/transports.mdx §Session Management
// 3), and the listens end so that their clients listen again on a new session. One built on the v1 SDK's
// examples before 2026 answers 400 "Bad Request: No valid session ID provided" instead: taken for a server
// without GET streams, the listen stayed open, acknowledged and deaf, for as long as the client stayed. That
// 400 now ends it as the 404 does (session-unknown.ts). Upstream: a real v1 SDK server, routed as the SDK's
// examples route sessions.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { modernRequest, post } from '../helpers/http.js';
import { startGatewayInFrontOfSession400Server } from '../helpers/session-400-upstream.js';
import { readSseUntil } from '../helpers/sse.js';

const { up, gw, close } = await startGatewayInFrontOfSession400Server();
after(close);

test('a listen whose GET the restarted server answers 400 "No valid session ID provided" ends, and the next one is served on a new session', async () => {
  // A call opens the caller's pooled session.
  const call = modernRequest(1, 'tools/call', { name: 'echo', arguments: { text: 'hi' } });
  assert.equal((await post(gw.url, call.body, call.headers)).status, 200);
  up.forgetSessions(); // restarted
  const listen = modernRequest(2, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const first = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: AbortSignal.timeout(10_000) });
  assert.equal(first.statusCode, 200);
  const ended = await readSseUntil(first.body, (m) => m.some((x) => x.id === 2), 3_000);
  assert.equal(ended[0]?.method, 'notifications/subscriptions/acknowledged');
  assert.ok(ended.some((m) => m.id === 2 && m.result !== undefined), `the listen ends, not left deaf: ${JSON.stringify(ended)}`);
  // Listened again, as its client does: a new session, whose GET the server serves.
  const initializes = up.messages.filter((m) => m.method === 'initialize').length;
  const ac = new AbortController();
  const again = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
  try {
    const acked = await readSseUntil(again.body, (m) => m.length >= 1);
    assert.equal(acked[0]?.method, 'notifications/subscriptions/acknowledged');
    assert.equal(up.messages.filter((m) => m.method === 'initialize').length, initializes + 1, 'a new session');
  } finally {
    ac.abort();
  }
});
