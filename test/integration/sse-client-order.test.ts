// Messages of one HTTP+SSE client keep their order (issue 16 item 2). Each POST is answered 202 before it
// is handled, so a client may send its next message at once; a notification (notifications/initialized) must
// still be handled upstream before what the client sent after it, as over Streamable HTTP, where a client
// waits for the notification's 202. server-everything registers some tools only once it has seen
// notifications/initialized, so a call that overtakes it finds no tool. The upstream here is slow to take
// the notification on purpose.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';

test('a call sent right after notifications/initialized reaches the upstream only after the notification was taken', async () => {
  const events: string[] = [];
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const msg = JSON.parse(body) as { id?: unknown; method?: string; params?: { protocolVersion?: string; clientInfo?: { name?: string } } };
    // A session per client, named after it: only the test client's own notification is slow.
    const sid = msg.method === 'initialize' ? `s-${msg.params?.clientInfo?.name ?? 'x'}` : String(req.headers['mcp-session-id']);
    const session = { 'mcp-session-id': sid };
    if (msg.method === 'notifications/initialized' && sid === 's-order') {
      events.push('initialized: received');
      setTimeout(() => {
        events.push('initialized: taken');
        res.writeHead(202, session).end();
      }, 300);
      return;
    }
    if (msg.id === undefined) return void res.writeHead(202, session).end();
    if (msg.method === 'tools/call') events.push('tools/call: received');
    const result =
      msg.method === 'initialize'
        ? { protocolVersion: msg.params?.protocolVersion ?? '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'slow', version: '1' } }
        : msg.method === 'tools/list'
          ? { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] }
          : { content: [{ type: 'text', text: 'echoed' }] };
    res.writeHead(200, { 'content-type': 'application/json', ...session }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  });
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], listen: { ssePath: '/sse' } });
  const client = new Client({ name: 'order', version: '1' });
  try {
    await client.connect(new SSEClientTransport(new URL(`${gw.origin}/sse`)));
    const result = (await client.callTool({ name: 'echo', arguments: {} })) as { content: Array<{ text: string }> };
    assert.equal(result.content[0]!.text, 'echoed');
    assert.deepEqual(events, ['initialized: received', 'initialized: taken', 'tools/call: received']);
  } finally {
    await client.close();
    await gw.close();
    await up.close();
  }
});
