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
import { assertEndedAtResponse, HeldAnswers, postHeld } from '../helpers/held-answer.js';
import { LEGACY_HEADERS, legacySession, rpc } from '../helpers/http.js';
import { answerModernJson } from '../helpers/modern-member.js';
import { messagesInSse, sseMessage as sse } from '../helpers/sse-messages.js';

let up: FakeUpstream;
let gw: TestGateway;
const held = new HeldAnswers();
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
    res.write(sse({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } }));
    await new Promise((r) => setTimeout(r, 50));
    const result = msg.method === 'tools/call' ? { content: [{ type: 'text', text: 'done' }] } : { messages: [] };
    res.write(sse({ jsonrpc: '2.0', id: msg.id, result }));
    await held.hold(res);
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
    const before = held.counts();
    const res = await postHeld(gw.url, rpc(`${method}-1`, method, params), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    const messages = messagesInSse(res.text);
    assert.deepEqual(messages.map((m) => m.method ?? `response ${m.id}`), ['notifications/message', `response ${method}-1`], res.text);
    await assertEndedAtResponse(held, before);
  });
}

// The same read serves the bridges (upstream/message-client.ts): a legacy client in front of a modern
// upstream that keeps its answer stream open after the response waited for it as well.
test('bridge: a legacy client\'s answer from a modern upstream ends with the response too', async () => {
  const modernHeld = new HeldAnswers();
  const modern = await startFakeUpstream(async (_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string };
    if (msg.method !== 'tools/call') return answerModernJson(res, msg, [{ name: 'work', inputSchema: { type: 'object' } }]);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(sse({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'done' }], resultType: 'complete' } }));
    await modernHeld.hold(res);
  }, { handshake: 'modern' });
  const bridged = await startGateway({ upstreams: [{ name: 'm', url: modern.url }] });
  try {
    const session = await legacySession(bridged.url);
    const res = await postHeld(bridged.url, rpc('b-1', 'tools/call', { name: 'work', arguments: {} }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    assert.match(res.text, /"done"/, res.text);
    await assertEndedAtResponse(modernHeld, { letGo: 0, endedByUpstream: 0 });
  } finally {
    await bridged.close();
    await modern.close();
  }
});
