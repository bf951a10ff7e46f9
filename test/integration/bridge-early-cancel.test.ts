// A legacy client's request and its notifications/cancelled are two POSTs, and the request may still be in
// Gatehouse's stages (an approval waiting for its reviewer, the store, a first list) when the cancellation
// reaches the legacy-client bridge, which holds the session in front of a modern upstream (GATEWAY-REQUIREMENTS
// §16.2 "Cancellation"). The bridge looked the id up among the calls in flight, found nothing, and dropped the
// cancellation: the request, when it came, was sent up and ran, a tool call the client had called off
// (2025-11-25/basic/utilities/cancellation.mdx §Behavior Requirements: the receiver SHOULD stop processing).
// perSession stdio children already remember such ids (stdio-session.ts); the bridge now does too, and a
// request whose cancellation came first is not sent: its exchange ends with no response, as a cancelled one.
//
// Real parts: the v2 SDK modern server fixture, which records what reached it; the client's messages are
// sent as a v1 client sends them, the cancellation first.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

test('a legacy client\'s cancellation that overtakes its request inside Gatehouse stops the request: it never reaches the modern upstream', { timeout: 30_000 }, async () => {
  const modern = await startModernServer();
  const gw = await startGateway({ upstreams: [{ name: 'm', url: modern.url }] });
  try {
    const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'quick-to-cancel', version: '1' } }));
    assert.equal(init.status, 200, init.text);
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    assert.equal((await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers)).status, 202);

    const cancel = await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'the user pressed Esc' } }), headers);
    assert.equal(cancel.status, 202, cancel.text);
    const called = await post(gw.url, rpc(7, 'tools/call', { name: 'echo', arguments: { text: 'called off' } }), headers);
    // cancellation.mdx §Behavior Requirements: no response is sent for a cancelled request.
    assert.equal(/"result"|"error"/.test(called.text), false, `no answer to the cancelled request: ${called.status} ${called.text}`);
    const reached = modern.requests.filter((r) => (r.body as { method?: string } | undefined)?.method === 'tools/call');
    assert.deepEqual(reached, [], 'the cancelled call never reached the upstream');

    // The session serves on: the next request (a new id) runs.
    const next = await post(gw.url, rpc(8, 'tools/call', { name: 'echo', arguments: { text: 'still here' } }), headers);
    assert.match(next.text, /still here/);
  } finally {
    await gw.close();
    await modern.close();
  }
});
