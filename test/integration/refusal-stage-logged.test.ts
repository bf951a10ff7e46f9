// A refusal a stage makes on the way out, in place of the upstream's answer (the output check's
// invalid_output, tools.mdx §Output Schema: structured content must conform to the tool's outputSchema), is
// that stage's: the request line and the span name it as `stage: output`, as the refused event does, not
// `upstream`, which says the upstream failed the call (README §Logs).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { startFakeUpstream, jsonResult, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { attr, SPAN_KIND, startReceiver, waitFor, type Receiver } from '../helpers/otlp.js';

let up: FakeUpstream;
let other: FakeUpstream;
let receiver: Receiver;
/** One upstream: its JSON answer is relayed, read whole by the output check. */
let gw: TestGateway;
/** Two upstreams: the catalog hands the member's answer on as a stream, whose final message the check replaces. */
let catalog: TestGateway;

const drifty = { content: [{ type: 'text', text: '{"n":"not a number"}' }], structuredContent: { n: 'not a number' }, resultType: 'complete' };

before(async () => {
  up = await startFakeUpstream(
    (_req, res, body) => {
      const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string } };
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'tools/list') {
        const tools = ['drifty', 'drifty_sse', 'drifty_slow_sse'].map((name) => ({ name, inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } }));
        return jsonResult(res, body, { tools, resultType: 'complete', ttlMs: 0, cacheScope: 'public' });
      }
      if (msg.method !== 'tools/call') return jsonResult(res, body, { resultType: 'complete' });
      if (msg.params?.name === 'drifty') return jsonResult(res, body, drifty);
      // An SSE answer: whole at once, or a notification first and the answer 300 ms later (relayed as it streams).
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const answer = `data: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: drifty })}\n\n`;
      if (msg.params?.name === 'drifty_sse') return void res.end(answer);
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } })}\n\n`);
      setTimeout(() => res.end(answer), 300);
    },
    { handshake: 'modern' },
  );
  other = await startFakeUpstream(
    (_req, res, body) => {
      const msg = JSON.parse(body) as { id?: unknown; method: string };
      if (msg.id === undefined) return void res.writeHead(202).end();
      jsonResult(res, body, msg.method === 'tools/list' ? { tools: [{ name: 'calm', inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 0, cacheScope: 'public' } : { resultType: 'complete' });
    },
    { handshake: 'modern' },
  );
  receiver = await startReceiver();
  const tracing = { enabled: true, endpoint: receiver.url };
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], tools: { outputValidation: 'enforce' }, tracing });
  catalog = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ name: 'up', url: up.url, era: 'modern' }, { name: 'other', url: other.url, era: 'modern' }], tools: { outputValidation: 'enforce' }, tracing });
});
after(async () => {
  await gw?.close();
  await catalog?.close();
  await other?.close();
  await up?.close();
  await receiver?.close();
});

const CASES = [
  { which: 'relayed JSON', catalog: false, tool: 'drifty' },
  { which: 'relayed SSE, whole', catalog: false, tool: 'drifty_sse' },
  { which: 'relayed SSE, streaming', catalog: false, tool: 'drifty_slow_sse' },
  { which: 'catalog stream', catalog: true, tool: 'drifty' },
] as const;

for (const { which, catalog: viaCatalog, tool: named } of CASES) {
  test(`output that breaks the outputSchema (${which}): logged and traced as refused by the output stage`, async () => {
    const gateway = viaCatalog ? catalog : gw;
    const list = modernRequest('list', 'tools/list');
    const tools = (await post(gateway.url, list.body, list.headers)).json().result.tools as Array<{ name: string }>;
    const tool = tools.map((t) => t.name).find((name) => name === named || name.endsWith(`_${named}`) || name.endsWith(`/${named}`))!;
    assert.ok(tool, JSON.stringify(tools));
    const req = modernRequest(which, 'tools/call', { name: tool, arguments: {} });
    const res = await post(gateway.url, req.body, req.headers);
    assert.match(res.text, /invalid_output/);
    const line = await waitFor('the request line', () => gateway.logs.find((l) => l.msg === 'request' && l.tool === tool));
    assert.equal(line.outcome, 'refused');
    assert.equal(line.refusal, 'invalid_output');
    assert.equal(line.stage, 'output');
    const span = await waitFor('the call span', () => receiver.spans.find((s) => s.kind === SPAN_KIND.SERVER && attr(s, 'gatehouse.call_id') === line.callId));
    assert.equal(attr(span, 'gatehouse.refusal_stage'), 'output');
  });
}

// The same stream answered to a 2024-11-05 HTTP+SSE client (the answer goes on its connection's stream).
test('output that breaks the outputSchema (catalog, HTTP+SSE client): logged as refused by the output stage', async () => {
  const client = new Client({ name: 'sse-output', version: '1' }, { capabilities: {} });
  try {
    await client.connect(new SSEClientTransport(new URL('/sse', catalog.origin)), { timeout: 10_000 });
    const tool = (await client.listTools()).tools.map((t) => t.name).find((name) => name.includes('drifty'))!;
    const before = catalog.logs.length;
    const result = await client.callTool({ name: tool, arguments: {} }).catch((err: unknown) => err);
    assert.match(JSON.stringify(result), /invalid_output/);
    const line = await waitFor('the request line', () => catalog.logs.slice(before).find((l) => l.msg === 'request' && l.tool === tool));
    assert.equal(line.outcome, 'refused');
    assert.equal(line.refusal, 'invalid_output');
    assert.equal(line.stage, 'output');
  } finally {
    await client.close();
  }
});

// One message of a 2025-03-26 batch (its answers go on one SSE stream, each through deliverOutcome).
test('output that breaks the outputSchema (a message of a batch): logged as refused by the output stage', async () => {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await post(gw.url, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'batcher', version: '1' } } }), headers);
  assert.equal(init.status, 200, init.text);
  const session = { ...headers, 'mcp-session-id': String(init.headers['mcp-session-id']) };
  assert.equal((await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), session)).status, 202);
  const before = gw.logs.length;
  const batch = await post(gw.url, JSON.stringify([{ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'drifty_sse', arguments: {} } }]), session);
  assert.match(batch.text, /invalid_output/);
  const line = await waitFor('the request line', () => gw.logs.slice(before).find((l) => l.msg === 'request' && l.tool === 'drifty_sse'));
  assert.equal(line.outcome, 'refused');
  assert.equal(line.refusal, 'invalid_output');
  assert.equal(line.stage, 'output');
});
