// Globs in the config are matched against texts a client chose: a resource URI against the access rules,
// an argument value against an approval rule. Matched as regular expressions (until 3 December), one
// request of an 8 KB URI against the rule `file:///*/*/*.txt` held the gateway's event loop for 55 s, and
// every other client with it. Through a running gateway, a long URI is answered (hidden: a resource the
// rules do not allow reads like one that does not exist), and so is the next request. The texts' matching itself is in test/unit/policy/glob.test.ts.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';

let up: FakeUpstream;
let gw: TestGateway;

before(async () => {
  up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method?: string; params?: { uri?: string } };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const resources = [{ uri: 'file:///docs/a/b.txt', name: 'b' }];
    const result =
      msg.method === 'resources/list' ? { resources, resultType: 'complete', ttlMs: 0 } : msg.method === 'resources/read' ? { contents: [{ uri: msg.params?.uri, text: 'content' }], resultType: 'complete' } : { tools: [], resultType: 'complete', ttlMs: 0 };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  }, { handshake: 'modern' });
  gw = await startGateway({ upstreams: [{ name: 'files', url: up.url, era: 'modern' }], policy: { rules: [{ id: 'docs', access: 'allow', resources: ['file:///*/*/*.txt'] }] } });
});
after(async () => {
  await gw?.close();
  await up?.close();
});

test('a legacy client: a resources/read of a 900 KB URI the access rule does not allow is refused like a missing resource, and the gateway goes on', { timeout: 60_000 }, async () => {
  const session = await legacySession(gw.url);
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  const res = await post(gw.url, rpc(2, 'resources/read', { uri: 'file:///' + 'a/'.repeat(450 * 1024) }), headers);
  assert.equal(res.json().error?.code, -32602, res.text.slice(0, 300));
  const ok = await post(gw.url, rpc(3, 'resources/read', { uri: 'file:///docs/a/b.txt' }), headers);
  assert.equal(ok.json().result.contents[0].text, 'content', ok.text.slice(0, 300));
});

test('a modern client: the URI travels in Mcp-Name too, so at most what a header holds (12 KB here) is matched; answered all the same', { timeout: 60_000 }, async () => {
  const read = modernRequest(4, 'resources/read', { uri: 'file:///' + 'a/'.repeat(6 * 1024) });
  const res = await post(gw.url, read.body, read.headers);
  assert.equal(res.json().error?.code, -32602, res.text.slice(0, 300));
  const allowed = modernRequest(5, 'resources/read', { uri: 'file:///docs/a/b.txt' });
  const ok = await post(gw.url, allowed.body, allowed.headers);
  assert.equal(ok.json().result.contents[0].text, 'content', ok.text.slice(0, 300));
});
