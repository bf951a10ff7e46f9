// A tool's inputSchema is the upstream's, the arguments are the client's, and Gatehouse matches the one
// against the other before anything is forwarded (2026-07-28/server/tools.mdx §Tool: inputSchema). A
// `pattern` that backtracks exponentially (`^(a+)+$`, `^(\w+\s?)*$`: common in the wild) made one call
// with an argument of 40 characters hold the gateway for hours. With V8's fallback to its linear engine
// and patterns compiled without `u` where they can be (src/policy/schema-patterns.ts), the call is
// refused as invalid_arguments at once, and the next call is served.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { legacySession, LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

const TOOLS = [
  { name: 'nested', inputSchema: { type: 'object', properties: { name: { type: 'string', pattern: '^(a+)+$' } } } },
  { name: 'words', inputSchema: { type: 'object', properties: { text: { type: 'string', pattern: '^(\\w+\\s?)*$' } } } },
  { name: 'keys', inputSchema: { type: 'object', patternProperties: { '^(x+x+)+y$': { type: 'integer' } }, additionalProperties: { type: 'string' } } },
];

let up: FakeUpstream;
let gw: TestGateway;
before(async () => {
  up = await startFakeUpstream((req, res, body) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'patterns', version: '1' } }, { 'mcp-session-id': 'up-1' });
    if (msg.method === 'tools/list') return jsonResult(res, body, { tools: TOOLS });
    jsonResult(res, body, { content: [{ type: 'text', text: 'ran' }] });
  });
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
});
after(async () => {
  await gw?.close();
  await up?.close();
});

test('arguments made to backtrack a tool schema\'s patterns are refused at once, and right ones still pass', { timeout: 60_000 }, async () => {
  const session = await legacySession(gw.url);
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  const call = async (id: number, name: string, args: Record<string, unknown>) => (await post(gw.url, rpc(id, 'tools/call', { name, arguments: args }), headers)).json().result as { isError?: boolean; content: Array<{ text: string }>; structuredContent?: { error?: { code: string } } };

  for (const [id, name, args] of [
    [2, 'nested', { name: 'a'.repeat(4_000) + '!' }],
    [3, 'words', { text: 'word '.repeat(2_000) + '!' }],
    [4, 'keys', { ['x'.repeat(4_000)]: 'not an integer, and the key backtracks' }],
  ] as const) {
    const refused = await call(id, name, args);
    assert.equal(refused.structuredContent?.error?.code, name === 'keys' ? undefined : 'invalid_arguments', JSON.stringify(refused).slice(0, 300));
    if (name === 'keys') assert.equal(refused.content[0]!.text, 'ran', 'a key that does not match the pattern is an additional property, a string');
  }
  assert.equal((await call(5, 'nested', { name: 'aaaa' })).content[0]!.text, 'ran');
  assert.equal((await call(6, 'words', { text: 'two words' })).content[0]!.text, 'ran');
});
