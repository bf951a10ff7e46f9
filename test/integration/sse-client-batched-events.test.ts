// A 2025-03-26 server may put several JSON-RPC messages in one SSE event, as a batch (2025-03-26/basic/
// transports.mdx §Sending Messages 6: the responses "MAY be batched", and the requests and notifications
// before them; §Listening for Messages 4, the same on a GET stream). No other revision has batches, and
// 2024-11-05's HTTP+SSE transport sends each message as its own `message` event (2024-11-05/basic/
// transports.mdx §HTTP with SSE). GATEWAY-REQUIREMENTS §2: a gateway must unbatch for peers without them.
// Behind Gatehouse: an old SSE client gets such messages one by one, its call's answer and its GET stream's
// notifications alike; a 2025-03-26 Streamable HTTP client gets the answer once, seen by the audit (its run
// id), with no error for the same id after it; a modern client, bridged, gets the answer.
// The upstream is a fake because no SDK server batches; it answers as 2025-03-26 allows.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const RUN_ID = 'dev.gatehouse/run_id';

let up: FakeUpstream;
let gw: TestGateway;
before(async () => {
  let sessions = 0;
  up = await startFakeUpstream((req, res, body) => {
    const sid = req.headers['mcp-session-id'];
    if (req.method === 'GET') {
      // The listening stream: a batch of two notifications, then it stays open.
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': String(sid) });
      const batch = [
        { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
        { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      ];
      res.write(`event: message\ndata: ${JSON.stringify(batch)}\n\n`);
      return;
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    const msg = JSON.parse(body) as { id?: string | number; method?: string; params?: { _meta?: { progressToken?: string | number } } };
    const session = { 'mcp-session-id': msg.method === 'initialize' ? `s${++sessions}` : String(sid) };
    if (msg.id === undefined) return void res.writeHead(202, session).end();
    if (msg.method === 'initialize') {
      const result = { protocolVersion: '2025-03-26', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'batching', version: '1' } };
      return void res.writeHead(200, { 'content-type': 'application/json', ...session }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    }
    if (msg.method === 'tools/list') {
      const result = { tools: [{ name: 'work', inputSchema: { type: 'object' } }] };
      return void res.writeHead(200, { 'content-type': 'application/json', ...session }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    }
    // The progress and the answer in one event, as a batch.
    const token = msg.params?._meta?.progressToken;
    const batch = [
      ...(token !== undefined ? [{ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 1 } }] : []),
      { jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'done' }] } },
    ];
    res.writeHead(200, { 'content-type': 'text/event-stream', ...session }).end(`event: message\ndata: ${JSON.stringify(batch)}\n\n`);
  });
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], listen: { ssePath: '/sse' } });
});
after(async () => {
  await gw?.close();
  await up?.close();
});

test("an HTTP+SSE client gets a batch's messages one by one: its call's progress and answer, its GET stream's notifications", async () => {
  const client = new Client({ name: 'unbatched', version: '1' });
  const errors: string[] = [];
  client.onerror = (err) => void errors.push(err.message);
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => void changes++);
  try {
    await client.connect(new SSEClientTransport(new URL('/sse', gw.origin)));
    const progress: number[] = [];
    const result = (await client.callTool({ name: 'work', arguments: {} }, undefined, { onprogress: (p) => void progress.push(p.progress), timeout: 10_000 })) as { content: Array<{ text: string }> };
    assert.equal(result.content[0]!.text, 'done');
    assert.deepEqual(progress, [1]);
    const deadline = Date.now() + 5_000;
    while (changes < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(changes, 2);
    assert.deepEqual(errors, []);
  } finally {
    await client.close();
  }
});

test('a 2025-03-26 Streamable HTTP client gets its answer once, audited, and no error for the same id after it', async () => {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await request(gw.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'old', version: '1' } } }) });
  const session = init.headers['mcp-session-id'] as string;
  await init.body.text();
  const res = await request(gw.url, { method: 'POST', headers: { ...headers, 'mcp-session-id': session }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'work', arguments: {}, _meta: { progressToken: 'p' } } }) });
  assert.equal(res.statusCode, 200);
  // Every message of the stream, batches read as their elements.
  const messages = (await res.body.text())
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .flatMap((l) => [JSON.parse(l.slice(6)) as unknown].flat()) as Array<{ id?: unknown; method?: string; result?: { _meta?: Record<string, unknown> }; error?: unknown }>;
  const answers = messages.filter((m) => m.id === 2);
  assert.equal(answers.length, 1, JSON.stringify(messages));
  assert.equal(answers[0]!.error, undefined);
  assert.equal(typeof answers[0]!.result?._meta?.[RUN_ID], 'string', 'the audit saw the answer and named its run');
  assert.ok(messages.some((m) => m.method === 'notifications/progress'));
});

test('a modern client, bridged, gets the answer a batch carried', async () => {
  const client = new V2Client({ name: 'modern', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new V2Transport(new URL(gw.url)));
  try {
    const result = (await client.callTool({ name: 'work', arguments: {} }, { timeout: 10_000 })) as { content: Array<{ text: string }> };
    assert.equal(result.content[0]!.text, 'done');
  } finally {
    await client.close();
  }
});
