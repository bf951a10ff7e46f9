// A legacy client's GET stream in front of a modern upstream is fed by an upstream subscriptions/listen
// (GATEWAY-REQUIREMENTS §16.2 "Subscriptions ⇄ GET stream"), opened again when the upstream ends it. A refused
// listen already backed off (bridge-listen-refused.test.ts); one the upstream acknowledged and then ended at
// once was taken for a stream that ran, and opened again every second, forever, for as long as the client
// listened (a server or proxy that cannot keep the stream). The pause now doubles, up to 30 s, while listens
// keep ending soon after they open, as a client resuming a stream backs off (2025-11-25/basic/transports.mdx
// §Listening for Messages). The upstream is a fake that must misbehave on purpose.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { assertReopenedAfterDoublingPauses } from '../helpers/reopen-backoff.js';

test('an upstream listen acknowledged and then ended at once is opened again after pauses that double, not every second', async () => {
  const listensAt: number[] = [];
  const up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body || '{}') as { id?: unknown; method?: string; params?: { notifications?: unknown } };
    if (msg.method === 'subscriptions/listen') {
      listensAt.push(performance.now());
      // Acknowledged, then ended gracefully with its result, at once.
      const ack = { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: msg.params?.notifications ?? {}, _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id } } };
      const done = { jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id } } };
      return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`data: ${JSON.stringify(ack)}\n\ndata: ${JSON.stringify(done)}\n\n`);
    }
    if (msg.id === undefined) return void res.writeHead(202).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', tools: [] } }));
  }, { handshake: 'modern', capabilities: { tools: { listChanged: true } } });
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  const ac = new AbortController();
  try {
    const init = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'listener', version: '1' } }));
    assert.equal(init.status, 200, init.text);
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
    const stream = await request(gw.url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' }, signal: ac.signal });
    assert.equal(stream.statusCode, 200);
    stream.body.on('data', () => {}).on('error', () => {});
    for (let i = 0; i < 200 && listensAt.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(listensAt.length, 1, 'the GET stream opened an upstream listen');
    await assertReopenedAfterDoublingPauses(listensAt, 'the listen');
  } finally {
    ac.abort();
    await gw.close();
    await up.close();
  }
});
