// The HTTP+SSE client endpoint (2024-11-05/basic/transports.mdx §HTTP with SSE; 2025-11-25
// transports.mdx §Backwards Compatibility) serves each connection as a legacy client of Gatehouse's own
// pipeline: after notifications/initialized it opens a listen stream (a GET) on the connection's session,
// and when the connection drops it ends the session (a DELETE). Those are Gatehouse's requests, not the
// client's: the request log and gatehouse_requests_total count only what the client sent (README §Logs:
// one `request` line per answered request).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { request } from 'undici';
import { startCountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway } from '../helpers/gateway.js';
import { attr, SPAN_KIND, startReceiver, waitFor } from '../helpers/otlp.js';

test('the listen GET and the closing DELETE the SSE endpoint makes itself are neither logged nor counted as requests; their spans say internal', async () => {
  const up = await startCountingUpstream('legacy');
  const receiver = await startReceiver();
  const gw = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], metrics: { enabled: true, port: 0 }, tracing: { enabled: true, endpoint: receiver.url }, log: { level: 'debug' } });
  const scrape = async (): Promise<string> => (await request(gw.gateway.metricsUrl!)).body.text();
  const client = new Client({ name: 'sse-counted', version: '1' }, { capabilities: {} });
  try {
    await client.connect(new SSEClientTransport(new URL('/sse', gw.origin)), { timeout: 10_000 });
    const answer = await client.callTool({ name: 'lookup', arguments: { item: 'x' } });
    assert.notEqual(answer.isError, true);
    // The listen stream is opened after notifications/initialized: its GET reaches the upstream (waited for,
    // bounded) before the client leaves.
    for (let i = 0; i < 200 && up.gets === 0; i++) await new Promise((r) => setTimeout(r, 25));
    assert.ok(up.gets >= 1, 'the SSE endpoint\'s listen GET reached the upstream');
    await client.close();
    // The session ends (the DELETE's last step) once the connection has dropped.
    const until = Date.now() + 8000;
    while (!/gatehouse_legacy_sessions 0\b/.test(await scrape())) {
      if (Date.now() > until) throw new Error('the legacy session never ended');
      await new Promise((r) => setTimeout(r, 50));
    }
    // The listen stream ends with the connection; its end is published right after its debug line.
    await waitFor('the listen stream to end', () => gw.logs.find((l) => l.msg === 'sse session listen stream ended' || l.msg === 'sse session listen stream failed'));
    const lines = gw.logs.filter((l) => l.msg === 'request');
    const seen = lines.map((l) => `${String(l.method)}`).sort();
    // What the client sent: the GET that opened the stream, then its POSTs.
    assert.deepEqual(seen, ['GET', 'initialize', 'notifications/initialized', 'tools/call'], JSON.stringify(lines));
    const text = await scrape();
    assert.match(text, /gatehouse_requests_total\{method="GET",era="legacy",[^}]*\} 1\n/);
    assert.doesNotMatch(text, /gatehouse_requests_total\{method="DELETE"/);
    // Spans still show them, marked as Gatehouse's own; the client's requests are not.
    const server = (name: string) => receiver.spans.filter((s) => s.kind === SPAN_KIND.SERVER && s.name === name);
    const deleted = await waitFor('the DELETE span', () => server('DELETE')[0]);
    assert.equal(attr(deleted, 'gatehouse.internal'), true);
    // The GETs: the client's, which opened the connection, and the listen stream's, which ended with it.
    const gets = await waitFor('both GET spans', () => (server('GET').length >= 2 ? server('GET') : undefined));
    assert.deepEqual(gets.map((s) => attr(s, 'gatehouse.internal')).sort(), [true, undefined]);
    const called = await waitFor('the tools/call span', () => server('tools/call lookup')[0] ?? server('tools/call')[0]);
    assert.equal(attr(called, 'gatehouse.internal'), undefined);
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
    await receiver.close();
  }
});
