// Gatehouse admits an Accept that takes both response types through a wildcard (`*/*`, `application/*,
// text/*`); toward the upstream it is the client, and a client MUST list both types (GATEWAY-REQUIREMENTS §1
// [C]; 2026-07-28/basic/transports/streamable-http.mdx §Sending Messages 2; 2025-11-25/basic/transports.mdx
// §Sending Messages 2), which the SDK servers read literally: the v1 server answers 406 to `Accept: */*`.
// Upstreams: a real v2 SDK modern-only server (whose tool reports the headers it got) and a real v1 SDK legacy
// server; the legacy client is a raw one, since the SDK clients always send both types.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGovernedHttpServer } from '../fixtures/upstreams/governed-tools.js';
import { startModernServer, type WhoamiReport } from '../fixtures/upstreams/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';

const modern = await startModernServer();
const legacy = await startGovernedHttpServer('legacy');
const modernGw = await startGateway({ upstreams: [{ name: 'modern', url: modern.url, era: 'modern' }] });
const legacyGw = await startGateway({ upstreams: [{ name: 'legacy', url: legacy.url, era: 'legacy' }] });
after(async () => {
  await modernGw.close();
  await legacyGw.close();
  await modern.close();
  await legacy.close();
});

const WILDCARDS = ['*/*', 'application/*, text/*'];

for (const accept of WILDCARDS) {
  test(`§Sending Messages 2: a modern call sent with Accept: ${accept} reaches the modern server with both types listed`, async () => {
    const { body, headers } = modernRequest(1, 'tools/call', { name: 'whoami-headers', arguments: {} });
    const res = await post(modernGw.url, body, { ...headers, accept });
    assert.equal(res.status, 200, res.text);
    const seen = (JSON.parse(res.json().result.content[0].text) as WhoamiReport).headers.accept;
    assert.match(String(seen), /application\/json/);
    assert.match(String(seen), /text\/event-stream/);
  });

  test(`§Sending Messages 2: a legacy client with Accept: ${accept} is served by the v1 server, not refused 406`, async () => {
    const init = await post(legacyGw.url, rpc(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } }), { ...LEGACY_HEADERS, accept });
    assert.equal(init.status, 200, init.text);
    const session = String(init.headers['mcp-session-id']);
    const headers = { ...LEGACY_HEADERS, accept, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    assert.equal((await post(legacyGw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers)).status, 202);
    const call = await post(legacyGw.url, rpc(1, 'tools/call', { name: 'add', arguments: { a: 2, b: 3 } }), headers);
    assert.equal(call.status, 200, call.text);
    assert.match(call.text, /"text":"5"/);
  });
}
