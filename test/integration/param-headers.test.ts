// Mcp-Param-* headers through Gatehouse (2026-07-28/basic/transports/streamable-http.mdx §Server Behavior for
// Custom Headers): checked against the upstream tool's x-mcp-header annotations for modern clients, and set
// by Gatehouse when it forwards a legacy client's call to a modern upstream.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';

const TOOL = { name: 'query', inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, sql: { type: 'string' } } } };
const up = await startFakeUpstream((_req, res, body) => {
  const msg = JSON.parse(body) as { method: string };
  jsonResult(res, body, msg.method === 'tools/list' ? { tools: [TOOL], resultType: 'complete', ttlMs: 0, cacheScope: 'public' } : { content: [], resultType: 'complete' });
}, { handshake: 'modern' });
const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }] });
after(async () => {
  await gw.close();
  await up.close();
});

const call = (region: string) => modernRequest(1, 'tools/call', { name: 'query', arguments: { region, sql: 'select 1' } });

test('a modern call whose argument is mirrored gets 400 -32020 without the header, or with a different value', async () => {
  const missing = call('eu-west');
  const before = up.requests.filter((r) => r.body.includes('"tools/call"')).length;
  const res = await post(gw.url, missing.body, missing.headers);
  assert.equal(res.status, 400);
  assert.equal(res.json().error.code, -32020);
  assert.match(res.json().error.message, /Mcp-Param-Region header is required/);
  const wrong = await post(gw.url, missing.body, { ...missing.headers, 'mcp-param-region': 'us-east' });
  assert.equal(wrong.status, 400);
  assert.equal(up.requests.filter((r) => r.body.includes('"tools/call"')).length, before, 'nothing reached the upstream');
  assert.ok((gw.gateway.edge.refusals.get('param_header') ?? 0) >= 2);
});

test('a modern call with the matching header is forwarded untouched', async () => {
  const ok = call('eu-west');
  const res = await post(gw.url, ok.body, { ...ok.headers, 'mcp-param-region': 'eu-west' });
  assert.equal(res.status, 200, res.text);
  assert.equal(up.requests.at(-1)!.headers['mcp-param-region'], 'eu-west');
});

test('a legacy client call forwarded to the modern upstream carries the Mcp-Param header Gatehouse computed', async () => {
  const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } }));
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
  const res = await post(gw.url, rpc(2, 'tools/call', { name: 'query', arguments: { region: 'Zürich', sql: 'select 1' } }), headers);
  assert.equal(res.status, 200, res.text);
  const seen = up.requests.at(-1)!;
  assert.equal(seen.headers['mcp-param-region'], '=?base64?WsO8cmljaA==?=');
  assert.equal(seen.headers['mcp-name'], 'query');
});

test('arguments that break the tool inputSchema come back as an isError result, and are not forwarded', async () => {
  const before = up.requests.filter((r) => r.body.includes('"tools/call"')).length;
  const req = modernRequest(9, 'tools/call', { name: 'query', arguments: { region: 'eu', sql: 42 } });
  const res = await post(gw.url, req.body, { ...req.headers, 'mcp-param-region': 'eu' });
  assert.equal(res.status, 200);
  const result = res.json().result;
  assert.equal(result.isError, true);
  assert.equal(result.structuredContent.error.code, 'invalid_arguments');
  assert.match(result.structuredContent.error.message, /\/sql must be string/);
  assert.equal(up.requests.filter((r) => r.body.includes('"tools/call"')).length, before);
});
