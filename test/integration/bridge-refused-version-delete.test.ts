// A modern client in front of a legacy upstream is served on a pooled legacy session (GATEWAY-REQUIREMENTS
// §16.1). When the upstream refuses that session's version with a 2026-07-28 -32022 listing what it supports
// (basic/versioning.mdx §Protocol Version Negotiation: an upstream upgraded, or one replica of several), the
// bridge drops its verdict and the session. The server may still hold that session (it issued it, and a
// deployment upgraded replica by replica still has the old ones): a client that no longer needs a session
// SHOULD DELETE it (2025-11-25/basic/transports.mdx §Session Management 5). Until 5 December it was only
// forgotten, and stayed upstream until the server's own timeout, if it has one. Now it is DELETEd, best
// effort, once the call that was refused is over, as the 409 path does (bridge-get-409-delete.test.ts).
// The upstream is a fake: it must refuse a version it once agreed to, on purpose.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { waitUntil } from '../helpers/stdio-children.js';

test('a legacy session whose version the upstream refuses with -32022 is DELETEd there, not only forgotten', async () => {
  const deletes: string[] = [];
  const events: string[] = [];
  /** The session each refused call named. */
  const refusedOn: string[] = [];
  let sessions = 0;
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method === 'GET') return void res.writeHead(405).end();
    if (req.method === 'DELETE') {
      deletes.push(String(req.headers['mcp-session-id']));
      events.push('DELETE');
      return void res.writeHead(200).end();
    }
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'initialize') {
      const result = { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'replica', version: '1' } };
      return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': `s-${++sessions}` }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    }
    if (msg.method === 'tools/call') {
      events.push('call refused');
      refusedOn.push(String(req.headers['mcp-session-id']));
      const error = { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'], requested: '2025-11-25' } };
      return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error }));
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] } }));
  });
  const gw = await startGateway({ upstreams: [{ name: 'app', url: up.url }] });
  try {
    const m = modernRequest(1, 'tools/call', { name: 'echo', arguments: {} });
    const answer = (await (await post(gw.url, m.body, m.headers)).json()) as { error?: { code?: number; data?: { upstreamCode?: number } } };
    assert.ok(answer.error !== undefined, `the refused call is an error: ${JSON.stringify(answer)}`);
    assert.ok(await waitUntil(() => deletes.length > 0, 8_000), `no DELETE reached the upstream: ${events.join(', ')}`);
    assert.equal(refusedOn.length, 1);
    assert.deepEqual(deletes, refusedOn, 'the session the call was refused on is DELETEd, once');
    assert.deepEqual(events.slice(-2), ['call refused', 'DELETE'], 'after the refused call');
  } finally {
    await gw.close();
    await up.close();
  }
});
