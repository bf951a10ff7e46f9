// Client-controlled values of the wrong type are refused at the front door, never reach a handler that
// would choke on them, and never come back as a 5xx blamed on the upstream. The probe value is an object
// whose `toString` is not a function: valid JSON on which `String(x)` throws. The field types are those of
// the client messages in shared/spec/schema/{2025-11-25,2026-07-28}/schema.json (CallToolRequestParams.name,
// ReadResourceRequestParams.uri, RequestMetaObject's protocolVersion: strings).

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, MODERN_META, modernRequest, post, rpc } from '../helpers/http.js';

const HOSTILE = { toString: 1 };
const TOOL = { name: 'query', inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, n: { type: 'integer', 'x-mcp-header': 'N' } } } };

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** An upstream of either era that lists one tool and answers every call; sessions for legacy clients. */
async function upstream(era: 'legacy' | 'modern'): Promise<FakeUpstream> {
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const result =
      msg.method === 'initialize'
        ? { protocolVersion: '2025-11-25', capabilities: { tools: {}, resources: {} }, serverInfo: { name: 'up', version: '1' } }
        : msg.method === 'tools/list'
          ? { tools: [TOOL] }
          : msg.method === 'resources/list'
            ? { resources: [{ uri: 'demo://a', name: 'a' }] }
            : { content: [{ type: 'text', text: 'ok' }] };
    const modern = era === 'modern' ? { resultType: 'complete' } : {};
    res.writeHead(200, { 'content-type': 'application/json', ...(msg.method === 'initialize' ? { 'mcp-session-id': 'up-1' } : {}) });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { ...result, ...modern } }));
  }, { handshake: era === 'modern' ? 'modern' : true });
  cleanups.push(() => up.close());
  return up;
}

async function gatewayFor(upstreams: Array<Record<string, unknown>>): Promise<TestGateway> {
  const gw = await startGateway({ upstreams });
  cleanups.push(() => gw.close());
  return gw;
}

/** What a client sent that reached the upstream (Gatehouse's own requests, ids `gatehouse-…` and `gh-…`, left out). */
const forwarded = (u: FakeUpstream): number => u.requests.filter((r) => !/"id":"(gatehouse|gh)-/.test(r.body)).length;

/** Posts and checks the refusal: 400, the JSON-RPC code, the request id echoed, nothing forwarded. */
async function expectRefused(gw: TestGateway, ups: FakeUpstream[], body: string, headers: Record<string, string>, code: number, id: unknown): Promise<string> {
  const before = ups.map(forwarded);
  const res = await post(gw.url, body, headers);
  assert.equal(res.status, 400, res.text);
  const json = res.json();
  assert.equal(json.error.code, code, res.text);
  assert.equal(json.id, id);
  ups.forEach((u, i) => assert.equal(forwarded(u), before[i], 'nothing refused reaches the upstream'));
  // The process still serves.
  assert.equal((await post(gw.url, rpc('after', 'ping'), LEGACY_HEADERS)).status < 500, true);
  return json.error.message as string;
}

describe('legacy clients', () => {
  test('tools/call with an object for name, through the pass-through and through the catalog → 400 -32602', async () => {
    const a = await upstream('legacy');
    const b = await upstream('legacy');
    const single = await gatewayFor([{ name: 'a', url: a.url, era: 'legacy' }]);
    const catalog = await gatewayFor([{ name: 'a', url: a.url }, { name: 'b', url: b.url }]);
    for (const gw of [single, catalog]) {
      const headers = { ...LEGACY_HEADERS, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': await legacySession(gw.url) };
      const message = await expectRefused(gw, [a, b], rpc(7, 'tools/call', { name: HOSTILE, arguments: {} }), headers, -32602, 7);
      assert.match(message, /params\.name must be a string/);
    }
  });

  test('resources/read, subscribe and completion with an object where a URI or name belongs → 400 -32602', async () => {
    const a = await upstream('legacy');
    const b = await upstream('legacy');
    const gw = await gatewayFor([{ name: 'a', url: a.url }, { name: 'b', url: b.url }]);
    const headers = { ...LEGACY_HEADERS, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': await legacySession(gw.url) };
    await expectRefused(gw, [a, b], rpc(1, 'resources/read', { uri: HOSTILE }), headers, -32602, 1);
    await expectRefused(gw, [a, b], rpc(2, 'resources/subscribe', { uri: [1] }), headers, -32602, 2);
    await expectRefused(gw, [a, b], rpc(3, 'completion/complete', { ref: { type: 'ref/resource', uri: HOSTILE }, argument: { name: 'x', value: '' } }), headers, -32602, 3);
    await expectRefused(gw, [a, b], rpc(4, 'tools/list', { cursor: HOSTILE }), headers, -32602, 4);
    await expectRefused(gw, [a, b], rpc(5, 'ping', { _meta: { progressToken: HOSTILE } }), headers, -32602, 5);
  });

  test('a subscriptions/listen whose filter has a number for its URIs, through the catalog → 400 -32602; it took the process down (fuzz seed 978031999)', async () => {
    const a = await upstream('legacy');
    const b = await upstream('modern');
    const gw = await gatewayFor([{ name: 'a', url: a.url, era: 'legacy' }, { name: 'b', url: b.url, era: 'modern' }]);
    const headers = { ...LEGACY_HEADERS, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': await legacySession(gw.url) };
    for (const [id, notifications] of [[1, { resourceSubscriptions: 0 }], [2, { resourceSubscriptions: false }], [3, { resourceSubscriptions: 'demo://a' }], [4, { toolsListChanged: HOSTILE }]] as const) {
      const message = await expectRefused(gw, [a, b], rpc(id, 'subscriptions/listen', { notifications }), headers, -32602, id);
      assert.match(message, /params\.notifications\.\w+ must be/);
    }
    // The same from a modern client.
    const modern = modernRequest(5, 'subscriptions/listen', { notifications: { resourceSubscriptions: 0 } });
    await expectRefused(gw, [a, b], modern.body, modern.headers, -32602, 5);
  });
});

describe('modern clients (2026-07-28)', () => {
  test('Mcp-Name: echo with an object name in the body → 400 -32602, not 500', async () => {
    const up = await upstream('modern');
    const gw = await gatewayFor([{ name: 'up', url: up.url }]);
    const { headers } = modernRequest(9, 'tools/call', { name: 'echo' });
    const body = JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: HOSTILE, arguments: {}, _meta: MODERN_META } });
    await expectRefused(gw, [up], body, headers, -32602, 9);
  });

  test('a notification whose _meta protocol version is an object → 400 -32602, not 500', async () => {
    const up = await upstream('modern');
    const gw = await gatewayFor([{ name: 'up', url: up.url }]);
    const { headers } = modernRequest(1, 'notifications/cancelled');
    const body = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: { 'io.modelcontextprotocol/protocolVersion': HOSTILE } } });
    await expectRefused(gw, [up], body, headers, -32602, null);
  });

  test('an argument mirrored by an x-mcp-header given an object → 400 -32020, not 5xx', async () => {
    const up = await upstream('modern');
    const gw = await gatewayFor([{ name: 'up', url: up.url }]);
    const list = modernRequest(1, 'tools/list');
    assert.equal((await post(gw.url, list.body, list.headers)).status, 200);
    const { headers } = modernRequest(2, 'tools/call', { name: 'query' });
    const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'query', arguments: { region: HOSTILE, n: { valueOf: 1 } }, _meta: MODERN_META } });
    const message = await expectRefused(gw, [up], body, { ...headers, 'mcp-param-region': 'eu' }, -32020, 2);
    assert.match(message, /Mcp-Param-Region header value 'eu' does not match body value '\{"toString":1\}'/);
  });

  test('through the catalog, a legacy client whose argument is an object gets the tool result refusal, and the modern upstream no header crash', async () => {
    const a = await upstream('modern');
    const b = await upstream('modern');
    const gw = await gatewayFor([{ name: 'a', url: a.url }, { name: 'b', url: b.url }]);
    const headers = { ...LEGACY_HEADERS, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': await legacySession(gw.url) };
    const res = await post(gw.url, rpc(3, 'tools/call', { name: 'a_query', arguments: { region: HOSTILE } }), headers);
    assert.equal(res.status, 200, res.text);
    const result = res.json().result;
    assert.equal(result.isError, true);
    assert.equal(result.structuredContent.error.code, 'invalid_arguments');
  });
});
