// A modern subscriptions/listen in front of a legacy upstream is fed by that upstream's GET stream
// (GATEWAY-REQUIREMENTS §16.1 "Subscriptions ⇄ GET stream"), opened again when the upstream ends it. A server
// that answers the GET and ends it at once (a proxy that closes idle streams, a server that cannot keep them)
// is no stream worth reopening every second: until 4 December it was, forever, for as long as the client
// listened. The pause now doubles, up to 30 s, while streams keep ending at once, as a refused listen's does
// (bridge-listen-refused.test.ts) and as a client resuming a stream backs off (2025-11-25/basic/transports.mdx
// §Listening for Messages; the SSE `retry` field). The upstream is a fake that must misbehave on purpose.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest } from '../helpers/http.js';
import { assertReopenedAfterDoublingPauses } from '../helpers/reopen-backoff.js';
import { readSseUntil } from '../helpers/sse.js';

test('an upstream GET stream that ends at once is reopened after pauses that double, not every second', async () => {
  const getsAt: number[] = [];
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method === 'GET') {
      getsAt.push(performance.now());
      // Answered, then ended at once.
      return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end();
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const result = msg.method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'closer', version: '1' } } : {};
    res.writeHead(200, { 'content-type': 'application/json', ...(msg.method === 'initialize' ? { 'mcp-session-id': 's-1' } : {}) }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  });
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
  const ac = new AbortController();
  try {
    const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
    assert.equal(res.statusCode, 200);
    assert.equal((await readSseUntil(res.body, (m) => m.length >= 1))[0]?.method, 'notifications/subscriptions/acknowledged');
    for (let i = 0; i < 100 && getsAt.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(getsAt.length, 1, 'the GET stream was opened for the listen');
    await assertReopenedAfterDoublingPauses(getsAt, 'the GET');
  } finally {
    ac.abort();
    await gw.close();
    await up.close();
  }
});
