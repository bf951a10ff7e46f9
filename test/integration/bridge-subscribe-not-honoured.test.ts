// A legacy client's resources/subscribe, in front of a modern upstream, becomes a URI in the filter of the
// upstream subscriptions/listen that feeds its GET stream (GATEWAY-REQUIREMENTS §16.2 "Subscriptions ⇄ GET
// stream"). The listen's acknowledgment names only what the server agreed to honour (2026-07-28
// basic/patterns/subscriptions.mdx §Acknowledgment: "Notification types the server does not support are
// omitted"), and a server may refuse the listen itself (the v2 SDK past its `maxSubscriptions`). Until
// 5 December the subscribe was answered `{}` at once, whatever the upstream then did with it: the client
// believed it was subscribed and heard nothing. Now the subscribe waits (5 s at most) for the acknowledgment
// of a listen that carries its URI, and a URI left out (or never acknowledged) is an error the 2025-11-25
// client sees (server/resources.mdx §Error Handling), and leaves the session's subscriptions.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { listenLoopback, writeFetchResponse } from '../fixtures/upstreams/node-adapter.js';
import { startGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/stdio-children.js';

test('a URI the upstream listen leaves out of its acknowledgment is a subscribe error, not {}', async () => {
  /** The resource filters of the listens asked, in order. */
  const filters: Array<string[] | undefined> = [];
  const listens: ServerResponse[] = [];
  // A fake: it must refuse one URI, which the v2 SDK server never does on its own.
  const up = await startFakeUpstream(
    (_req, res, body) => {
      const msg = JSON.parse(body) as { id?: string; method?: string; params?: { notifications?: { toolsListChanged?: boolean; resourceSubscriptions?: string[] } } };
      if (msg.method !== 'subscriptions/listen') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id ?? null, error: { code: -32601, message: 'Method not found' } }));
      const asked = msg.params?.notifications ?? {};
      filters.push(asked.resourceSubscriptions);
      const honoured = { ...asked, ...(asked.resourceSubscriptions ? { resourceSubscriptions: asked.resourceSubscriptions.filter((u) => u !== 'file:///refused') } : {}) };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id }, notifications: honoured } })}\n\n`);
      listens.push(res);
    },
    { handshake: 'modern', capabilities: { tools: { listChanged: true }, resources: { subscribe: true } } },
  );
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  const client = new Client({ name: 'subscriber', version: '1' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
    // The client's GET stream is open once its listen (tools list changes) went up.
    assert.ok(await waitUntil(() => filters.length === 1, 5_000), 'the GET stream opened a listen');
    assert.deepEqual(await client.subscribeResource({ uri: 'file:///ok' }), {}, 'an honoured URI is subscribed');
    const refused = await client.subscribeResource({ uri: 'file:///refused' }).then(() => undefined, (err: unknown) => err);
    assert.ok(refused instanceof McpError, `the URI the server left out was answered ${JSON.stringify(refused)}`);
    assert.equal(refused.code, -32602);
    assert.match(refused.message, /file:\/\/\/refused/);
    // It left the session's subscriptions: the next listen does not ask for it again.
    await client.subscribeResource({ uri: 'file:///other' });
    assert.deepEqual(filters.at(-1), ['file:///ok', 'file:///other']);
  } finally {
    await client.close();
    for (const res of listens) res.destroy();
    await gw.close();
    await up.close();
  }
});

test('a subscribe whose listen the v2 SDK server keeps refusing (past its maxSubscriptions) is an error within 5 s, not {}', async () => {
  // A real v2 SDK server declaring resources.subscribe, with room for one listen.
  let listensAsked = 0;
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: 'subscribable', version: '1.0.0' }, { capabilities: { resources: { subscribe: true, listChanged: true }, tools: { listChanged: true } } });
      server.registerTool('echo', { description: 'echo', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
      return server;
    },
    { legacy: 'reject', maxSubscriptions: 1 },
  );
  const { server, port } = await listenLoopback(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    if (body.toString('utf8').includes('"subscriptions/listen"')) listensAsked++;
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
    const request = new Request(`http://127.0.0.1:${port}${req.url ?? '/'}`, { method: req.method, headers, body: body.length > 0 ? new Uint8Array(body) : undefined, signal: controller.signal });
    await writeFetchResponse(res, await handler.fetch(request));
  });
  const gw = await startGateway({ upstreams: [{ name: 'm', url: `http://127.0.0.1:${port}/mcp` }] });
  const first = new Client({ name: 'first', version: '1' });
  const second = new Client({ name: 'second', version: '1' });
  try {
    await first.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
    assert.ok(await waitUntil(() => listensAsked >= 1, 5_000), 'the first GET stream opened a listen');
    // Its new filter's listen opens before the old one closes, so the server refuses it once; the listen
    // asked again once the old one is closed carries the URI, and its acknowledgment answers the subscribe.
    assert.deepEqual(await first.subscribeResource({ uri: 'file:///a' }), {}, 'the subscription the server took');
    const before = listensAsked;
    await second.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
    assert.ok(await waitUntil(() => listensAsked > before, 5_000), 'the second GET stream asked for a listen');
    // The client gives up after 15 s with its own timeout error (-32001): -32603 can only be the gateway's answer.
    const refused = await second.subscribeResource({ uri: 'file:///b' }, { timeout: 15_000 }).then(() => undefined, (err: unknown) => err);
    assert.ok(refused instanceof McpError, `the subscribe the server never took was answered ${JSON.stringify(refused)}`);
    assert.equal(refused.code, -32603, 'answered by the gateway, not left to the client\'s timeout');
  } finally {
    await second.close();
    await first.close();
    await gw.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
