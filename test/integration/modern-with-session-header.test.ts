// A 2026-07-28 request that carries a legacy session's Mcp-Session-Id (a dual-era client reusing its
// headers, or a proxy adding them) is served statelessly: the id is neither looked up nor echoed, and the
// legacy session it names is left as it was. Spec: 2026-07-28/basic/transports/streamable-http.mdx §Earlier
// Streamable HTTP Revisions (an Mcp-Session-Id on a request: ignore it, do not mint or echo session ids; a
// Last-Event-ID: ignore it; GET or DELETE: 405); 2026-07-28/basic/index.mdx §Statelessness.
// Upstreams: a real v1 SDK legacy server (modern client bridged to it) and a real v2 SDK modern-only server
// (legacy client bridged to it); the legacy client is a real v1 SDK client.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startGovernedHttpServer } from '../fixtures/upstreams/governed-tools.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function gatewayIn(front: 'legacy' | 'modern'): Promise<TestGateway> {
  const up = await startGovernedHttpServer(front);
  cleanups.push(() => up.close());
  const gw = await startGateway({ upstreams: [{ name: 'governed', url: up.url, era: front }] });
  cleanups.push(() => gw.close());
  return gw;
}

for (const upstream of ['legacy', 'modern'] as const) {
  test(`${upstream} upstream: a modern request naming a live legacy session, or a made-up one, is answered without it; the session goes on`, async () => {
    const gw = await gatewayIn(upstream);
    const transport = new StreamableHTTPClientTransport(new URL(gw.url));
    const legacy = new Client({ name: 'legacy-neighbour', version: '1.0.0' });
    await legacy.connect(transport);
    cleanups.push(() => legacy.close());
    assert.ok(transport.sessionId, 'the legacy client holds a session');
    const sessionId: string = transport.sessionId;

    for (const [n, named] of [[1, sessionId], [2, 'made-up-session-id']] as const) {
      const { body, headers } = modernRequest(n, 'tools/call', { name: 'add', arguments: { a: n, b: 40 } });
      const res = await post(gw.url, body, { ...headers, 'mcp-session-id': named, 'last-event-id': 'ev-7' });
      assert.equal(res.status, 200, `${named}: ${res.text}`);
      assert.equal(res.headers['mcp-session-id'], undefined, 'no session id echoed or minted');
      const text = String(res.json().result?.content?.[0]?.text);
      assert.equal(text, String(n + 40), res.text);
    }
    // GET and DELETE in the modern era: 405, and the legacy session they name is not ended.
    for (const method of ['GET', 'DELETE'] as const) {
      const refused = await request(gw.url, { method, headers: { 'mcp-protocol-version': '2026-07-28', accept: 'text/event-stream', 'mcp-session-id': sessionId } });
      await refused.body.dump();
      assert.equal(refused.statusCode, 405);
    }
    const still = (await legacy.callTool({ name: 'add', arguments: { a: 1, b: 1 } })) as { content: Array<{ text: string }> };
    assert.equal(still.content[0]!.text, '2', 'the legacy session still serves its client');
  });
}
