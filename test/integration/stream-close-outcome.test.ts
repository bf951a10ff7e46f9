// A long-lived stream a client opened only to listen has no end of its own: the client closing it is how
// it ends. 2024-11-05/basic/transports.mdx §HTTP with SSE (the connection's stream lasts as long as the
// client keeps it), 2025-11-25/basic/transports.mdx §Listening for Messages from the Server ("The client
// MAY close the SSE stream at any time"). Such a stream, once served, is logged and counted `ok` with the
// 200 it was sent; it was logged `aborted`, so every HTTP+SSE session and every GET stream read as a failure.
// A client that leaves before the stream was served (no headers sent) is still `aborted` with 499
// (client-abort-status.test.ts covers calls).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { request } from 'undici';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { openLegacySession } from '../helpers/http.js';
import { waitFor } from '../helpers/otlp.js';
import { startPollingServer, type PollingServer } from '../fixtures/upstreams/polling-server.js';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { modernRequest } from '../helpers/http.js';

let up: PollingServer;
let gw: TestGateway;
before(async () => {
  up = await startPollingServer();
  gw = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ name: 'poll', url: up.url, era: 'legacy' }], metrics: { enabled: true, port: 0 } });
});
after(async () => {
  await gw?.close();
  await up?.close();
});

/** Opens a GET stream with `headers`, waits for its head, then hangs up; resolves with the call id and status. */
function openAndHangUp(url: string, headers: Record<string, string>, body?: string): Promise<{ callId: string; status: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: body === undefined ? 'GET' : 'POST', headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      const callId = res.headers['x-gatehouse-call-id'];
      // The head came: the stream is served. The client now ends it, as a client does.
      setTimeout(() => {
        req.destroy();
        if (typeof callId !== 'string') reject(new Error(`no call id: HTTP ${res.statusCode}`));
        else resolve({ callId, status: res.statusCode ?? 0 });
      }, 200);
    });
    req.on('error', () => {});
    req.setTimeout(5_000, () => reject(new Error('no response head within 5 s')));
    req.end(body);
  });
}

async function metricsText(): Promise<string> {
  return (await request(gw.gateway.metricsUrl!)).body.text();
}

test('HTTP+SSE (2024-11-05): a session stream its client closes is logged and counted ok, status 200', async () => {
  const client = new Client({ name: 'closer', version: '1' }, { capabilities: {} });
  await client.connect(new SSEClientTransport(new URL('/sse', gw.origin)), { timeout: 10_000 });
  await client.listTools();
  await client.close();
  const line = await waitFor('the stream GET request line', () => gw.logs.find((l) => l.msg === 'request' && l.method === 'GET'));
  assert.equal(line.status, 200);
  assert.equal(line.outcome, 'ok');
  assert.equal(line.refusal, undefined);
  const text = await metricsText();
  assert.match(text, /gatehouse_requests_total\{method="GET",era="legacy",upstream="poll",outcome="ok"\} 1/);
  assert.doesNotMatch(text, /gatehouse_requests_total\{method="GET",[^}]*outcome="aborted"\}/);
});

test('Streamable HTTP (2025-11-25): a GET stream its client closes is logged and counted ok, status 200', async () => {
  const { headers } = await openLegacySession(gw.url, 'get-closer');
  assert.ok(headers, 'a session was issued');
  const { callId, status } = await openAndHangUp(gw.url, { 'mcp-session-id': headers['mcp-session-id'], 'mcp-protocol-version': headers['mcp-protocol-version'] });
  assert.equal(status, 200);
  const line = await waitFor('the GET request line', () => gw.logs.find((l) => l.msg === 'request' && l.callId === callId));
  assert.equal(line.status, 200);
  assert.equal(line.outcome, 'ok');
  assert.doesNotMatch(await metricsText(), /gatehouse_requests_total\{method="GET",[^}]*outcome="aborted"\}/);
});

test('2026-07-28: a subscriptions/listen stream its client closes is logged ok, status 200', async () => {
  // subscriptions.mdx §Cancellation: the client ends a subscription by closing its stream.
  const modern = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method !== 'subscriptions/listen') return jsonResult(res, body, { resultType: 'complete' });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { toolsListChanged: true }, _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id } } })}\n\n`);
  }, { handshake: 'modern' });
  const modernGw = await startGateway({ upstreams: [{ name: 'modern', url: modern.url, era: 'modern' }] });
  try {
    const { body, headers } = modernRequest('l-1', 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const { callId, status } = await openAndHangUp(modernGw.url, headers, body);
    assert.equal(status, 200);
    const line = await waitFor('the listen request line', () => modernGw.logs.find((l) => l.msg === 'request' && l.callId === callId));
    assert.equal(line.method, 'subscriptions/listen');
    assert.equal(line.status, 200);
    assert.equal(line.outcome, 'ok');
  } finally {
    await modernGw.close();
    await modern.close();
  }
});
