// A message of a 2025-03-26 batch whose upstream breaks its SSE answer off after the stream began: the
// request line said upstream_error (by the written failure's status) but without the failure's code as
// `refusal` and stage `upstream`, which README §Logs promises for an upstream that failed the call and the
// same call sent alone carries; and gatehouse_refusals_total did not count it. The batch edge now records
// the written failure as the other edges do (answer-summary.ts recordWrittenFailure).
// 2025-03-26/basic/index.mdx: implementations MUST support receiving JSON-RPC batches.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { rpc } from '../helpers/http.js';
import { waitUntil } from '../helpers/stdio-children.js';

let up: FakeUpstream;
let gw: TestGateway;
/** What a 2025-03-26 client sends: no MCP-Protocol-Version header. */
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

before(async () => {
  // A legacy server whose tools/call starts an SSE answer, then drops the connection without the response.
  up = await startFakeUpstream((req, res, body) => {
    // A GET stream or the session's DELETE: none offered.
    if (req.method !== 'POST') return void res.writeHead(req.method === 'DELETE' ? 200 : 405).end();
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'initialize') return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-03-26', capabilities: { tools: {} }, serverInfo: { name: 'breaking', version: '1' } } }));
    if (msg.method === 'tools/list') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'breaks', inputSchema: { type: 'object' } }] } }));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } })}\n\n`);
    setTimeout(() => res.destroy(), 50);
  });
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], metrics: { enabled: true, port: 0 } });
});
after(async () => {
  await gw?.close();
  await up?.close();
});

test('a batch message whose answer the upstream broke off is logged and counted as the same call sent alone', async () => {
  const init = await request(gw.url, { method: 'POST', headers: HEADERS, body: rpc(0, 'initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'batch-failure', version: '1' } }) });
  assert.equal(init.statusCode, 200);
  await init.body.dump();
  const session = { ...HEADERS, 'mcp-session-id': init.headers['mcp-session-id'] as string };
  const ack = await request(gw.url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  assert.equal(ack.statusCode, 202);
  await ack.body.dump();

  const alone = await request(gw.url, { method: 'POST', headers: session, body: rpc(1, 'tools/call', { name: 'breaks', arguments: {} }) });
  assert.match(await alone.body.text(), /GW_ERR_UPSTREAM_UNREACHABLE/);
  const batch = await request(gw.url, { method: 'POST', headers: session, body: `[${rpc(2, 'tools/call', { name: 'breaks', arguments: {} })}]` });
  assert.match(await batch.body.text(), /GW_ERR_UPSTREAM_UNREACHABLE/);

  assert.ok(await waitUntil(() => gw.logs.filter((l) => l.msg === 'request' && l.method === 'tools/call').length === 2, 2_000));
  const lines = gw.logs.filter((l) => l.msg === 'request' && l.method === 'tools/call').map((l) => [l.outcome, l.refusal, l.stage]);
  assert.deepEqual(lines, [['upstream_error', 'upstream_unreachable', 'upstream'], ['upstream_error', 'upstream_unreachable', 'upstream']]);
  const metrics = await (await request(gw.gateway.metricsUrl!)).body.text();
  assert.match(metrics, /^gatehouse_refusals_total\{reason="upstream_unreachable"\} 2$/m);
});
