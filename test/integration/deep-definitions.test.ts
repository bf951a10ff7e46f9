// A tool whose definition an upstream nests thousands of levels deep (JSON sets no depth; only a client's
// messages are held to listen.maxJsonDepth). The catalog digests each definition for pinning, compiles its
// schema and writes the list again, and each of those walks overflowed the stack on it: with several
// upstreams every tools/list failed (a 502 that quoted the RangeError) and every tool of every upstream
// was unknown; with one, the gateway could not check the names and passed every call on unchecked (no
// argument check, no pin). Such a tool is now left out of the catalog, and logged; a single upstream with
// one is served through the catalog, so it is hidden there too; everything else is governed as before.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';

const DEPTH = 20_000;
/** An object schema nested DEPTH levels deep, written as text: JSON.stringify would overflow on it. */
const DEEP_SCHEMA = '{"type":"object","properties":{"a":'.repeat(DEPTH) + '{}' + '}}'.repeat(DEPTH);
const FINE = { name: 'fine', inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } };

const ups: FakeUpstream[] = [];
const gateways: TestGateway[] = [];

before(async () => {
  for (let i = 0; i < 2; i++) {
    ups.push(
      await startFakeUpstream((_req, res, body) => {
        const msg = JSON.parse(body) as { id?: unknown; method?: string };
        if (msg.id === undefined) return void res.writeHead(202).end();
        const id = JSON.stringify(msg.id);
        const result = msg.method === 'tools/list' ? `{"tools":[{"name":"deep","inputSchema":${DEEP_SCHEMA}},${JSON.stringify(FINE)}],"resultType":"complete"}` : '{"content":[{"type":"text","text":"ran"}],"resultType":"complete"}';
        res.writeHead(200, { 'content-type': 'application/json' }).end(`{"jsonrpc":"2.0","id":${id},"result":${result}}`);
      }, { handshake: 'modern' }),
    );
  }
});
after(async () => {
  for (const gw of gateways) await gw.close();
  for (const up of ups) await up.close();
});

async function send(gw: TestGateway, id: number, method: string, params?: Record<string, unknown>) {
  const m = modernRequest(id, method, params);
  return post(gw.url, m.body, m.headers);
}

describe('a tool definition nested 20,000 levels deep', () => {
  for (const [label, count] of [['one upstream', 1], ['two upstreams (the catalog)', 2]] as const) {
    test(`${label}: the tool is left out and logged; the others are listed and governed`, { timeout: 60_000 }, async () => {
      const gw = await startGateway({ upstreams: ups.slice(0, count).map((u, i) => ({ name: `u${i}`, url: u.url, era: 'modern' })), tools: { pinning: 'enforce' }, admin: { enabled: true, port: 0, token: 'a'.repeat(32) } });
      gateways.push(gw);
      const list = await send(gw, 1, 'tools/list');
      assert.equal(list.status, 200, list.text.slice(0, 300));
      const names = (list.json().result.tools as Array<{ name: string }>).map((t) => t.name).sort();
      assert.deepEqual(names, count === 1 ? ['fine'] : ['u0_fine', 'u1_fine']);
      const fine = count === 1 ? 'fine' : 'u0_fine';
      // Governed: the arguments are checked against the tool's schema before anything is forwarded.
      const bad = (await send(gw, 2, 'tools/call', { name: fine, arguments: { n: 'not a number' } })).json();
      assert.equal(bad.result?.structuredContent?.error?.code, 'invalid_arguments', JSON.stringify(bad).slice(0, 300));
      const good = (await send(gw, 3, 'tools/call', { name: fine, arguments: { n: 1 } })).json();
      assert.equal(good.result?.content?.[0]?.text, 'ran', JSON.stringify(good).slice(0, 300));
      const deep = (await send(gw, 4, 'tools/call', { name: count === 1 ? 'deep' : 'u0_deep', arguments: {} })).json();
      assert.equal(deep.error?.code, -32602, JSON.stringify(deep).slice(0, 300));
      assert.ok(gw.logs.some((l) => l.msg === 'tool left out of the catalog: its definition nests deeper than 256 levels' && l.name === 'deep'));
      assert.equal(gw.logs.filter((l) => l.level === 'error').length, 0);
    });
  }

  test('a legacy client of the one upstream (bridged): the same list and the same checks', { timeout: 60_000 }, async () => {
    const gw = await startGateway({ upstreams: [{ name: 'u0', url: ups[0]!.url, era: 'modern' }] });
    gateways.push(gw);
    // The first list decides that the upstream is served through the catalog; a session opened before
    // that was opened on the pass-through and is gone (404: a client starts a new one), as for any
    // upstream whose names need rewriting (src/catalog/single-upstream.ts).
    let headers = { ...LEGACY_HEADERS, 'mcp-session-id': await legacySession(gw.url), 'mcp-protocol-version': '2025-11-25' };
    let list = await post(gw.url, rpc(1, 'tools/list'), headers);
    if (list.status === 404) {
      headers = { ...headers, 'mcp-session-id': await legacySession(gw.url) };
      list = await post(gw.url, rpc(1, 'tools/list'), headers);
    }
    assert.deepEqual((list.json().result.tools as Array<{ name: string }>).map((t) => t.name), ['fine']);
    const bad = (await post(gw.url, rpc(2, 'tools/call', { name: 'fine', arguments: { n: 'x' } }), headers)).json();
    assert.equal(bad.result?.structuredContent?.error?.code, 'invalid_arguments', JSON.stringify(bad).slice(0, 300));
    assert.equal((await post(gw.url, rpc(3, 'tools/call', { name: 'deep', arguments: {} }), headers)).json().error?.code, -32602);
  });

});

// The same class in an upstream's capabilities (its server/discover result): the catalog merges every
// member's capabilities by a recursive walk and writes them again. One upstream whose `experimental`
// capability nested 20,000 levels made every client's `initialize` and `server/discover` fail (502, quoting
// the RangeError, in a multi-upstream gateway). A capability nested deeper than 32 levels is left out of
// the upstream's profile, and logged; its other capabilities stand.
describe('a capability nested 20,000 levels deep', () => {
  let deepCaps: FakeUpstream;
  before(async () => {
    const experimental = '{"x":'.repeat(DEPTH) + '{}' + '}'.repeat(DEPTH);
    deepCaps = await startFakeUpstream((_req, res, body) => {
      const msg = JSON.parse(body) as { id?: unknown; method?: string };
      if (msg.id === undefined) return void res.writeHead(202).end();
      const id = JSON.stringify(msg.id);
      let result = `{"tools":[${JSON.stringify(FINE)}],"resultType":"complete"}`;
      if (msg.method === 'server/discover') result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"experimental":${experimental}},"serverInfo":{"name":"deep-caps","version":"1"},"resultType":"complete"}`;
      if (msg.method === 'initialize') return void res.writeHead(400).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(`{"jsonrpc":"2.0","id":${id},"result":${result}}`);
    }, { handshake: false });
    ups.push(deepCaps);
  });

  for (const [label, count] of [['one upstream', 1], ['two upstreams (the catalog)', 2]] as const) {
    test(`${label}: server/discover and a legacy initialize answer, with the upstream's other capabilities`, { timeout: 60_000 }, async () => {
      const upstreams = [{ name: 'deep', url: deepCaps.url, era: 'modern' }, ...(count === 2 ? [{ name: 'u0', url: ups[0]!.url, era: 'modern' }] : [])];
      const gw = await startGateway({ upstreams });
      gateways.push(gw);
      const discover = await send(gw, 1, 'server/discover');
      assert.equal(discover.status, 200, discover.text.slice(0, 300));
      assert.deepEqual(Object.keys(discover.json().result.capabilities), ['tools']);
      const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }), LEGACY_HEADERS);
      assert.equal(init.status, 200, init.text.slice(0, 300));
      assert.ok(init.json().result.capabilities.tools);
      assert.ok(gw.logs.some((l) => l.msg === "capabilities left out of the upstream's profile: nested deeper than 32 levels" && l.upstream === 'deep'));
    });
  }
});
