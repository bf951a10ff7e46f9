// A client that hangs up before any answer was sent got no status at all: its request line, its span
// and its count say so with the status nginx logs for it (499, "client closed request") and the outcome
// `aborted`, never the 200 Node's response object holds by default (nothing was ever written). One that
// leaves after the headers went out keeps the status it was sent (2026-07-28/basic/patterns/cancellation.mdx
// §Transport-Specific Cancellation: closing the connection is the cancellation).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { request } from 'undici';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest } from '../helpers/http.js';
import { SPAN_KIND, startReceiver, waitFor, attr, type Receiver } from '../helpers/otlp.js';

let up: CountingUpstream;
let receiver: Receiver;
let gw: TestGateway;

before(async () => {
  up = await startCountingUpstream('modern');
  receiver = await startReceiver();
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    metrics: { enabled: true, port: 0 },
    tracing: { enabled: true, endpoint: receiver.url },
  });
});
after(async () => {
  await gw?.close();
  await up?.close();
  await receiver?.close();
});

test('a client that leaves before the response headers is logged, counted and traced as 499 aborted', async () => {
  // The answer is written when the upstream answers (1.5 s); the client leaves once the upstream has the call.
  const m = modernRequest(1, 'tools/call', { name: 'record_slowly', arguments: { item: 'left', ms: 1500 } });
  const controller = new AbortController();
  const sent = request(gw.url, { method: 'POST', headers: m.headers, body: m.body, signal: controller.signal });
  await waitFor('the call to reach the upstream', () => up.received.find((body) => body.includes('"left"')));
  controller.abort();
  await assert.rejects(sent);
  const line = await waitFor('the request line', () => gw.logs.find((l) => l.msg === 'request' && l.tool === 'record_slowly'));
  assert.equal(line.outcome, 'aborted');
  assert.equal(line.status, 499);
  const span = await waitFor('the call span', () => receiver.spans.find((s) => s.kind === SPAN_KIND.SERVER && attr(s, 'gatehouse.call_id') === line.callId));
  assert.equal(attr(span, 'http.response.status_code'), 499);
  assert.equal(attr(span, 'gatehouse.outcome'), 'aborted');
  const text = await (await request(gw.gateway.metricsUrl!)).body.text();
  assert.match(text, /gatehouse_requests_total\{method="tools\/call",era="modern",upstream="up",outcome="aborted"\} 1/);
  assert.doesNotMatch(text, /gatehouse_requests_total\{method="tools\/call",[^}]*outcome="ok"\}/);
});

test('a call answered in full keeps its status', async () => {
  const m = modernRequest(2, 'tools/call', { name: 'lookup', arguments: { item: 'stayed' } });
  const res = await request(gw.url, { method: 'POST', headers: m.headers, body: m.body });
  assert.equal(res.statusCode, 200);
  await res.body.text();
  const line = await waitFor('the request line', () => gw.logs.find((l) => l.msg === 'request' && l.tool === 'lookup'));
  assert.equal(line.status, 200);
  assert.equal(line.outcome, 'ok');
});

// The HTTP+SSE transport (2024-11-05/basic/transports.mdx §HTTP with SSE): the POST is accepted with 202
// and the answer goes on the connection's stream; a client that closes that stream before its answer
// never got one.
test('HTTP+SSE: a call whose stream closed before its answer is logged as 499 aborted', async () => {
  const sseGw = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ name: 'up', url: up.url, era: 'modern' }] });
  const client = new Client({ name: 'leaver', version: '1' }, { capabilities: {} });
  try {
    await client.connect(new SSEClientTransport(new URL('/sse', sseGw.origin)), { timeout: 10_000 });
    const pending = client.callTool({ name: 'record_slowly', arguments: { item: 'sse-left', ms: 1500 } }).catch(() => undefined);
    await waitFor('the call to reach the upstream', () => up.received.find((body) => body.includes('"sse-left"')));
    await client.close();
    await pending;
    const line = await waitFor('the request line', () => sseGw.logs.find((l) => l.msg === 'request' && l.tool === 'record_slowly'));
    assert.equal(line.outcome, 'aborted');
    assert.equal(line.status, 499);
  } finally {
    await client.close().catch(() => {});
    await sseGw.close();
  }
});
