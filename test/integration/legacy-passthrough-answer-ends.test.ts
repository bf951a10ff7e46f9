// A legacy (2025-11-25) upstream's SSE answer on the pass-through that stays open after its response.
// 2025-11-25/basic/transports.mdx §Sending Messages 6: "After the JSON-RPC response has been sent, the
// server SHOULD close the SSE stream." Until 5 December a legacy client's answer stayed open for as long as
// the upstream kept its stream open (up to its body timeout), so a client that reads the answer to its end
// (curl, plain HTTP clients) waited that long after its response had come; so did a legacy client of a
// modern upstream (the bridge reads the answer stream the same way). The pass-through, which takes a legacy
// answer stream up itself, and the bridges' reads (upstream/resumable-sse.ts) now end it at the response.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, post, rpc } from '../helpers/http.js';

const HOLD_MS = 4_000;

let up: FakeUpstream;
let gw: TestGateway;
let upstreamClosed = 0;
before(async () => {
  up = await startFakeUpstream(async (_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { protocolVersion?: string } };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method !== 'tools/call' && msg.method !== 'prompts/get') {
      const result =
        msg.method === 'initialize'
          ? { protocolVersion: msg.params?.protocolVersion ?? '2025-11-25', capabilities: { tools: {}, prompts: {} }, serverInfo: { name: 'held', version: '1' } }
          : msg.method === 'tools/list'
            ? { tools: [{ name: 'work', inputSchema: { type: 'object' } }] }
            : msg.method === 'prompts/list'
              ? { prompts: [{ name: 'any' }] }
              : {};
      res.writeHead(200, { 'content-type': 'application/json', ...(msg.method === 'initialize' ? { 'mcp-session-id': 'held-session' } : {}) });
      return void res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } })}\n\n`);
    await new Promise((r) => setTimeout(r, 50));
    const result = msg.method === 'tools/call' ? { content: [{ type: 'text', text: 'done' }] } : { messages: [] };
    res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result })}\n\n`);
    res.once('close', () => upstreamClosed++);
    await new Promise((r) => setTimeout(r, HOLD_MS));
    res.end();
  });
  gw = await startGateway({ upstreams: [{ name: 'l', url: up.url, era: 'legacy' }] });
});
after(async () => {
  await gw.close();
  await up.close();
});

for (const [method, params] of [['tools/call', { name: 'work', arguments: {} }], ['prompts/get', { name: 'any' }]] as const) {
  test(`${method}: a legacy client's answer ends with the response, not when the upstream's stream does`, async () => {
    const session = await legacySession(gw.url);
    const closedBefore = upstreamClosed;
    const started = performance.now();
    const res = await post(gw.url, rpc(`${method}-1`, method, params), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, AbortSignal.timeout(15_000));
    const took = performance.now() - started;
    const messages = res.text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)) as Record<string, any>);
    assert.deepEqual(messages.map((m) => m.method ?? `response ${m.id}`), ['notifications/message', `response ${method}-1`], res.text);
    assert.ok(took < HOLD_MS / 2, `the answer took ${took.toFixed(0)} ms: it waited for the upstream's stream to end`);
    for (let i = 0; i < 50 && upstreamClosed === closedBefore; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(upstreamClosed, closedBefore + 1, 'the upstream stream was let go');
  });
}

// The same read serves the bridges (upstream/message-client.ts): a legacy client in front of a modern
// upstream that keeps its answer stream open after the response waited for it as well.
test('bridge: a legacy client\'s answer from a modern upstream ends with the response too', async () => {
  let closed = 0;
  const modern = await startFakeUpstream(async (_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string };
    if (msg.method !== 'tools/call') {
      const key = msg.method === 'resources/templates/list' ? 'resourceTemplates' : msg.method.split('/')[0]!;
      const result = msg.method === 'tools/list' ? { tools: [{ name: 'work', inputSchema: { type: 'object' } }], ttlMs: 0 } : msg.method.endsWith('/list') ? { [key]: [], ttlMs: 0 } : {};
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', ...result } }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'done' }], resultType: 'complete' } })}\n\n`);
    res.once('close', () => closed++);
    await new Promise((r) => setTimeout(r, HOLD_MS));
    res.end();
  }, { handshake: 'modern' });
  const bridged = await startGateway({ upstreams: [{ name: 'm', url: modern.url }] });
  try {
    const session = await legacySession(bridged.url);
    const started = performance.now();
    const res = await post(bridged.url, rpc('b-1', 'tools/call', { name: 'work', arguments: {} }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, AbortSignal.timeout(15_000));
    const took = performance.now() - started;
    assert.match(res.text, /"done"/, res.text);
    assert.ok(took < HOLD_MS / 2, `the answer took ${took.toFixed(0)} ms: it waited for the upstream's stream to end`);
    for (let i = 0; i < 50 && closed === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(closed, 1, 'the upstream stream was let go');
  } finally {
    await bridged.close();
    await modern.close();
  }
});
