// A governed call whose upstream breaks its SSE answer off after the stream began: the client gets 200, an
// error event GW_ERR_UPSTREAM_UNREACHABLE for its request, and the audit records the call `failed`. The
// request line and the metrics said `ok` (the status was 200 and no refusal was known when the answer
// began); README §Logs: an upstream that failed the call is `upstream_error`, with the failure's code as
// `refusal` and stage `upstream`, as the audit records it `failed`. Found by the fuzzer's audit/log property.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { waitUntil } from '../helpers/stdio-children.js';

let up: FakeUpstream;
let gw: TestGateway;
let storePath: string;

before(async () => {
  up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'tools/list') {
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'breaks', inputSchema: { type: 'object' } }], resultType: 'complete' } }));
    }
    // A progress notification, then the connection dropped without the response.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } })}\n\n`);
    setTimeout(() => res.destroy(), 50);
  }, { handshake: 'modern' });
  storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-stream-failure-')), 'gatehouse.db');
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'sqlite', path: storePath }, metrics: { enabled: true, port: 0 } });
});
after(async () => {
  await gw.close();
  await up.close();
});

test('the request line and the metrics say upstream_error, as the audit says failed', async () => {
  const call = modernRequest(5, 'tools/call', { name: 'breaks', arguments: {} });
  const res = await post(gw.url, call.body, call.headers);
  assert.equal(res.status, 200, res.text);
  assert.match(res.text, /GW_ERR_UPSTREAM_UNREACHABLE/);
  const callId = res.headers['x-gatehouse-call-id'] as string;

  assert.ok(await waitUntil(() => gw.logs.some((l) => l.msg === 'request' && l.callId === callId), 2_000));
  const line = gw.logs.find((l) => l.msg === 'request' && l.callId === callId)!;
  assert.deepEqual([line.status, line.outcome, line.refusal, line.stage], [200, 'upstream_error', 'upstream_unreachable', 'upstream']);

  const store = new SqliteStore(storePath);
  try {
    const records = (await store.readAudit({ limit: 100 })).filter((r) => r.callId === callId);
    assert.deepEqual(records.map((r) => [r.outcome, r.refusal]), [['failed', 'upstream_unreachable']]);
  } finally {
    await store.close();
  }

  const metrics = await (await request(gw.gateway.metricsUrl!)).body.text();
  assert.match(metrics, /gatehouse_requests_total\{[^}]*method="tools\/call"[^}]*outcome="upstream_error"[^}]*\} 1/);
  assert.doesNotMatch(metrics, /gatehouse_requests_total\{[^}]*method="tools\/call"[^}]*outcome="ok"[^}]*\}/);
  // Counted among the refusals under the code the line gives, as a failure found before the answer began
  // is: until 5 December a failure written once the answer had begun was in no refusal count.
  assert.match(metrics, /^gatehouse_refusals_total\{reason="upstream_unreachable"\} 1$/m);
});

test('a client of the 2024-11-05 SSE transport: the same call is logged upstream_error with its code and stage', async () => {
  // The SSE endpoint writes the failure on the client's stream; its request line said upstream_error by
  // the failure's status but carried no refusal code or stage (README §Logs), until 3 December.
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { SSEClientTransport } = await import('@modelcontextprotocol/sdk/client/sse.js');
  const sseGw = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ name: 'up', url: up.url, era: 'modern' }] });
  const client = new Client({ name: 'sse-failure', version: '1' }, { capabilities: {} });
  try {
    await client.connect(new SSEClientTransport(new URL('/sse', sseGw.origin)), { timeout: 10_000 });
    await assert.rejects(client.callTool({ name: 'breaks', arguments: {} }), /GW_ERR_UPSTREAM|upstream/i);
    assert.ok(await waitUntil(() => sseGw.logs.some((l) => l.msg === 'request' && l.method === 'tools/call'), 2_000));
    const line = sseGw.logs.find((l) => l.msg === 'request' && l.method === 'tools/call')!;
    assert.deepEqual([line.outcome, line.refusal, line.stage], ['upstream_error', 'upstream_unreachable', 'upstream']);
  } finally {
    await client.close().catch(() => {});
    await sseGw.close();
  }
});
