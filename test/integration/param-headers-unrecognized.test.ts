// An Mcp-Param header Gatehouse does not recognize (no x-mcp-header of the tool names it) goes to the
// upstream untouched, whichever way the call is routed. Spec: 2026-07-28/basic/transports/streamable-http.mdx
// §Server Behavior for Custom Headers ("Intermediate servers that do not recognize an Mcp-Param-{Name}
// header MUST forward it and otherwise ignore it"); GATEWAY-REQUIREMENTS §4 [I].
// Upstreams: real v2 SDK servers whose `whoami-headers` tool reports the headers its request came with.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startModernServer, type WhoamiReport } from '../fixtures/upstreams/modern-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const one = await startModernServer();
const two = await startModernServer();
const alone = await startGateway({ upstreams: [{ name: 'one', url: one.url, era: 'modern' }] });
const prefixed = await startGateway({ upstreams: [{ name: 'one', url: one.url, era: 'modern' }], tools: { naming: { prefix: 'always' } } });
const catalog = await startGateway({ upstreams: [{ name: 'one', url: one.url, era: 'modern' }, { name: 'two', url: two.url, era: 'modern' }] });
after(async () => {
  for (const gw of [alone, prefixed, catalog]) await gw.close();
  await one.close();
  await two.close();
});

async function headersSeenUpstream(gw: TestGateway, tool: string): Promise<WhoamiReport['headers']> {
  const { body, headers } = modernRequest(1, 'tools/call', { name: tool, arguments: {} });
  const res = await post(gw.url, body, { ...headers, 'mcp-param-tenant': 'acme', 'Mcp-Param-Shard': '=?base64?w6k=?=' });
  assert.equal(res.status, 200, res.text);
  return (JSON.parse(res.json().result.content[0].text) as WhoamiReport).headers;
}

for (const [label, gw, tool] of [
  ['the byte pass-through (one upstream)', () => alone, 'whoami-headers'],
  ['one upstream with prefixed names', () => prefixed, 'one_whoami-headers'],
  ['a catalog of two upstreams', () => catalog, 'one_whoami-headers'],
] as const) {
  test(`§Server Behavior for Custom Headers: ${label} forwards Mcp-Param headers it does not recognize, untouched`, async () => {
    const seen = await headersSeenUpstream(gw(), tool);
    assert.equal(seen['mcp-param-tenant'], 'acme');
    assert.equal(seen['mcp-param-shard'], '=?base64?w6k=?=', 'not decoded or re-encoded');
  });
}
