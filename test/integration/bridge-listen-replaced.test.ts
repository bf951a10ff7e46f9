// A legacy client's subscribe changes the filter of the upstream subscriptions/listen that feeds its GET
// stream, and filters are fixed per listen, so the bridge opens a new listen and then closes the old one
// (GATEWAY-REQUIREMENTS §16.2 "Subscriptions ⇄ GET stream"). When the new one could not be opened (its
// connection failed), the old one was left open and forgotten: the listen opened again later did not
// close it, so the client heard every notification twice, and when the session ended it stayed open
// upstream, holding a connection. Here the upstream (a fake: it must fail a connection on purpose) breaks
// the second listen's connection.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/stdio-children.js';

test("a listen whose replacement failed is not left open: notifications come once, and nothing stays open upstream after the session", async () => {
  const listens: ServerResponse[] = [];
  let asked = 0;
  const up = await startFakeUpstream(
    (_req, res, body) => {
      const msg = JSON.parse(body) as { id?: string; method?: string; params?: { notifications?: unknown } };
      if (msg.method !== 'subscriptions/listen') return void res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id ?? null, error: { code: -32601, message: 'Method not found' } }));
      asked++;
      // The second listen (the one with the new filter) breaks: its connection is cut before any answer. The
      // others are acknowledged as asked (the subscribe waits for an acknowledgment that names its URI).
      if (asked === 2) return void res.socket?.destroy();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id }, notifications: msg.params?.notifications } })}\n\n`);
      listens.push(res);
    },
    { handshake: 'modern', capabilities: { tools: { listChanged: true }, resources: { subscribe: true } } },
  );
  const open = (): ServerResponse[] => listens.filter((r) => !r.destroyed && !r.writableEnded);
  const gw = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ name: 'm', url: up.url }] });
  const client = new Client({ name: 'subscriber', version: '1' });
  let changes = 0;
  client.fallbackNotificationHandler = async (n) => void (n.method === 'notifications/tools/list_changed' && changes++);
  try {
    await client.connect(new SSEClientTransport(new URL('/sse', gw.origin)), { timeout: 10_000 });
    assert.ok(await waitUntil(() => open().length === 1, 5_000), 'the first listen opened');
    await client.subscribeResource({ uri: 'file:///watched' });
    // The second listen breaks; the one after it (a second later) opens.
    assert.ok(await waitUntil(() => asked >= 3 && listens.length === 2, 8_000), `listens asked: ${asked}`);
    // The listen replaced is closed once its replacement is up: waited for (bounded), not slept on. A listen
    // left open stays open, and is told below both as a second notification and as a second open listen.
    await waitUntil(() => open().length === 1, 5_000);
    const before = changes;
    for (const res of open()) res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: {} })}\n\n`);
    await waitUntil(() => changes > before, 5_000);
    // A ping's answer comes on the same SSE stream: a second copy of the change, written with the first, is in by then.
    await client.ping();
    assert.equal(changes - before, 1, 'the tools changed once, and the client heard it as often');
    assert.equal(open().length, 1, 'one listen open upstream');
    await client.close();
    assert.ok(await waitUntil(() => open().length === 0, 5_000), `${open().length} listen(s) still open upstream after the session ended`);
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
  }
});
