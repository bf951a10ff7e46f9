// A tool whose inputSchema Gatehouse cannot check (2026-07-28/basic/index.mdx §Schema Dialect: an
// unsupported dialect is an error saying so; §$ref Resolution: a schema that fails for an external $ref
// SHOULD be rejected rather than treated as permissive). By default its calls are refused with a
// schema_unsupported tool error naming why, before anything reaches the upstream; `tools.uncheckableSchemas:
// allow` forwards them unchecked. The upstream is scripted to list such tools and count its calls.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { legacySession, LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

const TOOLS = [
  { name: 'old', inputSchema: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object', properties: { n: { type: 'integer' } } } },
  { name: 'remote', inputSchema: { type: 'object', properties: { a: { $ref: 'https://schemas.example.com/a.json' } } } },
  { name: 'fine', inputSchema: { type: 'object', properties: { n: { type: 'integer' } } } },
];

let up: FakeUpstream;
const calls = (name: string): number => up.requests.filter((r) => r.body.includes('"tools/call"') && r.body.includes(`"name":"${name}"`)).length;
const cleanups: Array<() => Promise<unknown>> = [];
before(async () => {
  up = await startFakeUpstream((req, res, body) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'schemas', version: '1' } }, { 'mcp-session-id': 'up-1' });
    if (msg.method === 'tools/list') return jsonResult(res, body, { tools: TOOLS });
    jsonResult(res, body, { content: [{ type: 'text', text: 'ran' }] });
  });
  cleanups.push(() => up.close());
});
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function callAs(url: string, name: string, args: Record<string, unknown>) {
  const session = await legacySession(url);
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  await post(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
  return (await post(url, rpc(1, 'tools/call', { name, arguments: args }), headers)).json() as { result: { isError?: boolean; content: Array<{ text: string }>; structuredContent?: { error?: { code: string } } } };
}

describe('tools.uncheckableSchemas', () => {
  test('refuse (the default): a draft-04 schema and an external $ref refuse the call, saying why; nothing reaches the upstream', async () => {
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
    cleanups.push(() => gw.close());
    const old = await callAs(gw.url, 'old', { n: 1 });
    assert.equal(old.result.isError, true);
    assert.equal(old.result.structuredContent?.error?.code, 'schema_unsupported');
    assert.match(old.result.content[0]!.text, /draft-04.*is not one Gatehouse supports/);
    const remote = await callAs(gw.url, 'remote', { a: 1 });
    assert.equal(remote.result.structuredContent?.error?.code, 'schema_unsupported');
    assert.match(remote.result.content[0]!.text, /outside itself .*schemas\.example\.com/);
    assert.equal(calls('old') + calls('remote'), 0);
    // A tool with a schema Gatehouse can check is unaffected.
    assert.equal((await callAs(gw.url, 'fine', { n: 1 })).result.content[0]!.text, 'ran');
  });

  test('allow: the calls go through unchecked', async () => {
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], tools: { uncheckableSchemas: 'allow' } });
    cleanups.push(() => gw.close());
    assert.equal((await callAs(gw.url, 'old', { n: 'not checked' })).result.content[0]!.text, 'ran');
    assert.equal((await callAs(gw.url, 'remote', { a: 1 })).result.content[0]!.text, 'ran');
    assert.equal(calls('old'), 1);
  });
});
