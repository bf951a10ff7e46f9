// What a client's unknown names and URIs make the catalog do to its upstreams. A tool, prompt or resource
// URI the routes do not know makes the catalog list again, so that an item added since the last list is
// found; but the caller chooses the names, the URIs and its capability set, so these lists are floored:
// at most once a second per kind and capability set, and at most 10 a second in all (src/catalog/catalog.ts
// relist). Until 3 December every resources/read of an unknown URI listed every upstream, every page,
// and a new capability set per call did the same for unknown tool names.
//
// And where reads go: the URIs of each upstream's last resource list, replaced at every list, so a URI an
// upstream no longer lists is forgotten (one map of every URI ever listed grew without end before).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { MODERN_META, modernRequest, post } from '../helpers/http.js';

/** A modern upstream whose lists are never cached (ttlMs 0); each resources/list gives the URIs of `resources()` (null: it fails). */
async function upstream(resources: () => string[] | null): Promise<FakeUpstream & { lists: (method: string) => number }> {
  const fake = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string; params?: { uri?: string } };
    res.setHeader('content-type', 'application/json');
    const answer = (result: Record<string, unknown>): void => void res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', ...result } }));
    if (msg.method === 'resources/list') {
      const uris = resources();
      if (uris === null) return void res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32603, message: 'list unavailable' } }));
      return answer({ resources: uris.map((uri) => ({ uri, name: uri })), ttlMs: 0 });
    }
    if (msg.method === 'resources/read') return answer({ contents: [{ uri: msg.params!.uri, text: `read ${msg.params!.uri}` }] });
    if (msg.method.endsWith('/list')) return answer({ [msg.method.split('/')[0]!.replace('resources/templates', 'resourceTemplates')]: [], ttlMs: 0 });
    answer({});
  }, { handshake: 'modern' });
  return Object.assign(fake, { lists: (method: string) => fake.requests.filter((r) => JSON.parse(r.body).method === method).length });
}

function read(gw: TestGateway, uri: string, capabilities: Record<string, unknown> = {}): Promise<{ status: number; json: () => Record<string, any> }> {
  const { body, headers } = modernRequest(1, 'resources/read', { uri, _meta: { ...MODERN_META, 'io.modelcontextprotocol/clientCapabilities': capabilities } });
  return post(gw.url, body, headers, AbortSignal.timeout(15_000));
}

function callTool(gw: TestGateway, name: string, capabilities: Record<string, unknown>): Promise<{ status: number; json: () => Record<string, any> }> {
  const { body, headers } = modernRequest(1, 'tools/call', { name, arguments: {}, _meta: { ...MODERN_META, 'io.modelcontextprotocol/clientCapabilities': capabilities } });
  return post(gw.url, body, headers, AbortSignal.timeout(15_000));
}

describe('lists caused by unknown names and URIs (catalog of two upstreams)', () => {
  let current: string[] | null = ['file:///a/1'];
  let a: Awaited<ReturnType<typeof upstream>>;
  let b: Awaited<ReturnType<typeof upstream>>;
  let gw: TestGateway;
  before(async () => {
    a = await upstream(() => current);
    b = await upstream(() => ['file:///b/1']);
    gw = await startGateway({ upstreams: [{ name: 'a', url: a.url }, { name: 'b', url: b.url }] });
  });
  after(async () => {
    await gw.close();
    await a.close();
    await b.close();
  });

  test('a listed URI is read from its upstream; one added since the last list is found by listing again', async () => {
    const first = await read(gw, 'file:///b/1');
    assert.equal(first.json().result?.contents?.[0]?.text, 'read file:///b/1', JSON.stringify(first.json()));
    current = ['file:///a/1', 'file:///a/2'];
    // Past the floor of the list the first read made.
    await new Promise((r) => setTimeout(r, 1_100));
    const added = await read(gw, 'file:///a/2');
    assert.equal(added.json().result?.contents?.[0]?.text, 'read file:///a/2', JSON.stringify(added.json()));
  });

  test('a URI the upstream no longer lists is forgotten at its next list', async () => {
    current = ['file:///a/1', 'file:///a/3'];
    await new Promise((r) => setTimeout(r, 1_100));
    // Any list of resources replaces what the catalog knows of each upstream's URIs.
    const listed = await post(gw.url, modernRequest(2, 'resources/list', { _meta: MODERN_META }).body, modernRequest(2, 'resources/list', { _meta: MODERN_META }).headers);
    assert.deepEqual(listed.json().result.resources.map((r: { uri: string }) => r.uri).sort(), ['file:///a/1', 'file:///a/3', 'file:///b/1']);
    const gone = await read(gw, 'file:///a/2');
    assert.equal(gone.json().error?.code, -32602, JSON.stringify(gone.json()));
    assert.match(gone.json().error.message, /Resource not found/);
  });

  test('a list that fails forgets nothing: reads of the URIs the last good list gave still go to their upstream', async () => {
    const good = current;
    current = null;
    const listed = modernRequest(3, 'resources/list', { _meta: MODERN_META });
    const partial = await post(gw.url, listed.body, listed.headers);
    assert.deepEqual(partial.json().result.resources.map((r: { uri: string }) => r.uri), ['file:///b/1'], 'the failing upstream is left out of the list');
    const still = await read(gw, 'file:///a/3');
    assert.equal(still.json().result?.contents?.[0]?.text, 'read file:///a/3', JSON.stringify(still.json()));
    current = good;
  });

  test('50 reads of unknown URIs in a burst list each upstream at most twice, not 50 times', async () => {
    await new Promise((r) => setTimeout(r, 1_100));
    const before = [a.lists('resources/list'), b.lists('resources/list')];
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => read(gw, `file:///nobody/${i}`)));
    for (const answer of answers) assert.equal(answer.json().error?.code, -32602);
    // One list for the burst; a second only if the burst straddled a second's boundary.
    assert.ok(a.lists('resources/list') - before[0]! <= 2, `upstream a listed ${a.lists('resources/list') - before[0]!} times`);
    assert.ok(b.lists('resources/list') - before[1]! <= 2, `upstream b listed ${b.lists('resources/list') - before[1]!} times`);
  });

  test('unknown tool names, each call with a capability set of its own: at most 10 lists a second in all', async () => {
    await new Promise((r) => setTimeout(r, 1_100));
    const before = a.lists('tools/list');
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => callTool(gw, `nobody_${i}`, { experimental: { [`set${i}`]: {} } })));
    for (const answer of answers) assert.equal(answer.json().error?.code, -32602, JSON.stringify(answer.json()));
    const lists = a.lists('tools/list') - before;
    // One burst: 10 lists, 20 if it straddled a second's boundary; without the cap each of the 40 listed.
    assert.ok(lists <= 20, `${lists} lists of the upstream's tools for 40 calls`);
  });
});

test('over the cap, a call waits for a list of its kind under way: at start, 30 callers with 30 capability sets all find the tool (slow_known_tool)', async () => {
  // Each tools/list takes 500 ms; before the first ends, no route exists.
  const slow = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string };
    res.setHeader('content-type', 'application/json');
    const answer = (result: Record<string, unknown>): void => void res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', ...result } }));
    if (msg.method === 'tools/list') return void setTimeout(() => answer({ tools: [{ name: 'known_tool', inputSchema: { type: 'object' } }], ttlMs: 0 }), 500);
    if (msg.method.endsWith('/list')) return answer({ [msg.method === 'resources/templates/list' ? 'resourceTemplates' : msg.method.split('/')[0]!]: [], ttlMs: 0 });
    answer({ content: [{ type: 'text', text: 'ran' }] });
  }, { handshake: 'modern' });
  const other = await upstream(() => []);
  const gw = await startGateway({ upstreams: [{ name: 'slow', url: slow.url }, { name: 'other', url: other.url }] });
  try {
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => callTool(gw, 'slow_known_tool', { experimental: { [`set${i}`]: {} } })));
    const failed = answers.filter((a) => a.json().result?.content?.[0]?.text !== 'ran');
    assert.equal(failed.length, 0, `${failed.length} of 30 calls did not find the tool: ${JSON.stringify(failed[0]?.json())}`);
  } finally {
    await gw.close();
    await slow.close();
    await other.close();
  }
});
