// A legacy client's GET stream in front of a modern upstream is fed by an upstream subscriptions/listen
// (GATEWAY-REQUIREMENTS §16.2 "Subscriptions ⇄ GET stream"), whose filter names what the upstream declared it
// can notify (2026-07-28 basic/patterns/subscriptions.mdx §Notification Filter: list changes where the server
// declared `listChanged`, resource updates where it declared `resources.subscribe`). An upstream that declared
// none of them can send nothing on a listen; until 5 December each legacy GET stream opened one anyway, an
// empty filter holding one of the upstream's listen connections (and a listen of its `maxSubscriptions`) for
// as long as the client stayed. The GET stream is still served (Gatehouse's own messages go on it); no listen
// goes up for it. Upstream: a real v2 SDK server that declares `tools` without `listChanged`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

test('a GET stream on an upstream that can notify nothing is served without an upstream listen', async () => {
  const up = await startModernServer({ unchanging: true });
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  const listens = (): number => up.requests.filter((r) => (r.body as { method?: string } | undefined)?.method === 'subscriptions/listen').length;
  const ac = new AbortController();
  try {
    const init = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'listener', version: '1' } }));
    assert.equal(init.status, 200, init.text);
    assert.notEqual(init.json().result.capabilities.tools?.listChanged, true, 'the upstream declared no list changes');
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
    const stream = await request(gw.url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' }, signal: ac.signal });
    assert.equal(stream.statusCode, 200, 'the GET stream is served');
    stream.body.on('data', () => {}).on('error', () => {});
    // A call on the session goes up and back while the stream is open: the bridge is at work.
    const call = await post(gw.url, rpc(2, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }), headers);
    assert.equal(call.status, 200, call.text);
    assert.match(call.text, /"text":"hi"/);
    // A listen would have gone up at once with the GET; give it time to show.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(listens(), 0, 'no subscriptions/listen for a stream nothing could reach');
  } finally {
    ac.abort();
    await gw.close();
    await up.close();
  }
});
