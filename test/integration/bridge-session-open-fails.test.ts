// The modern-client bridge opens a legacy session for a caller with `initialize`, then MUST send
// notifications/initialized (2025-11-25/basic/lifecycle.mdx §Initialization). When that second step fails (the
// connection cut, the server gone for a moment), the session is not used, and the call fails; the server,
// which issued the session in its answer to `initialize`, still holds it. A client that no longer needs a
// session SHOULD DELETE it (2025-11-25/basic/transports.mdx §Session Management 5), as Gatehouse already did
// when the `initialize` itself failed (era-probe.ts endFailedSession); until 5 December a session whose
// notifications/initialized failed was left upstream. The upstream is a fake that must misbehave on purpose.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

test('a session whose notifications/initialized failed is DELETEd upstream', async () => {
  const deletes: string[] = [];
  const cut: string[] = [];
  let sessions = 0;
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method === 'DELETE') {
      deletes.push(String(req.headers['mcp-session-id']));
      return void res.writeHead(200).end();
    }
    if (req.method === 'GET') return void res.writeHead(405).end();
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    const session = String(req.headers['mcp-session-id']);
    if (msg.method === 'notifications/initialized' && cut.length === 0 && session !== 's-1') {
      // The first session opened for a caller (s-1 is the one Gatehouse lists tools in) has its
      // notifications/initialized cut off.
      cut.push(session);
      return void res.socket?.destroy();
    }
    if (msg.id === undefined) return void res.writeHead(202).end();
    const result = msg.method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'cut', version: '1' } } : msg.method === 'tools/list' ? { tools: [] } : { content: [{ type: 'text', text: 'ok' }] };
    res.writeHead(200, { 'content-type': 'application/json', ...(msg.method === 'initialize' ? { 'mcp-session-id': `s-${++sessions}` } : {}) }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  });
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
  try {
    const call = modernRequest(1, 'tools/call', { name: 't', arguments: {} });
    await post(gw.url, call.body, call.headers);
    assert.equal(cut.length, 1, 'a notifications/initialized was cut');
    for (let i = 0; i < 100 && !deletes.includes(cut[0]!); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(deletes.includes(cut[0]!), `the session is DELETEd: ${JSON.stringify({ cut, deletes })}`);
  } finally {
    await gw.close();
    await up.close();
  }
});
