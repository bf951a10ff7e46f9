// A resource the access rules hide must be answered like one that does not exist, after the same work, so
// that neither the words nor the time tell it exists (README "Access rules"; server/resources.mdx §Error
// Handling: a missing resource is -32602). A read of a URI nobody listed makes the catalog list resources
// again (at most once a second per capability set) before it is refused; until 5 December a hidden URI was
// refused at once, without that list, so a caller timing its reads could tell the hidden URIs from the
// missing ones (tools and prompts already took the same path: access-stage.ts). Now a hidden URI makes the
// same list, and a completion about a hidden template the same templates list. The upstream is a v2 SDK
// server; the work is counted as the lists it receives.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createMcpHandler, McpServer, ResourceTemplate } from '@modelcontextprotocol/server';
import { listenLoopback, writeFetchResponse } from '../fixtures/upstreams/node-adapter.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

/** Past the catalog's floor between two lists caused by unknown URIs (catalog.ts RELIST_FLOOR_MS). */
const PAST_FLOOR_MS = 1_100;

const received: string[] = [];
let closeUpstream: () => Promise<void>;
let gw: TestGateway;

before(async () => {
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'files', version: '1.0.0' });
    for (const uri of ['test://public/a', 'test://secret/b']) {
      server.registerResource(uri, uri, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri, text: `content of ${uri}` }] }));
    }
    for (const base of ['test://public', 'test://secret']) {
      server.registerResource(`${base} items`, new ResourceTemplate(`${base}/items/{id}`, { list: undefined, complete: { id: () => ['1', '2'] } }), { mimeType: 'text/plain' }, async (uri) => ({ contents: [{ uri: uri.href, text: 'item' }] }));
    }
    return server;
  }, { legacy: 'reject' });
  const { server, port } = await listenLoopback(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    if (body.length > 0) received.push((JSON.parse(body.toString('utf8')) as { method?: string }).method ?? '');
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
    const request = new Request(`http://127.0.0.1:${port}${req.url ?? '/'}`, { method: req.method, headers, ...(body.length > 0 ? { body: new Uint8Array(body) } : {}) });
    await writeFetchResponse(res, await handler.fetch(request));
  });
  closeUpstream = async () => {
    await handler.close().catch(() => {});
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  };
  gw = await startGateway({ upstreams: [{ name: 'files', url: `http://127.0.0.1:${port}/mcp`, era: 'modern' }], policy: { rules: [{ id: 'public', access: 'allow', tools: ['*'], resources: ['test://public/*'] }] } });
});
after(async () => {
  await gw?.close();
  await closeUpstream?.();
});

let id = 0;
/** The answer to one request, and how many lists of `list` it made the upstream receive. */
async function counted(list: string, method: string, params: Record<string, unknown>): Promise<{ error?: { code: number; message: string; data?: unknown }; lists: number }> {
  await new Promise((r) => setTimeout(r, PAST_FLOOR_MS));
  const before = received.filter((m) => m === list).length;
  const req = modernRequest(++id, method, params);
  const answer = (await post(gw.url, req.body, req.headers)).json() as { error?: { code: number; message: string; data?: unknown } };
  return { ...answer, lists: received.filter((m) => m === list).length - before };
}

test('a hidden resource makes the catalog list resources again, as a missing one does, and reads the same', async () => {
  const visible = modernRequest(++id, 'resources/read', { uri: 'test://public/a' });
  assert.equal((await post(gw.url, visible.body, visible.headers)).json().result.contents[0].text, 'content of test://public/a');
  const missing = await counted('resources/list', 'resources/read', { uri: 'test://public/nope' });
  const hidden = await counted('resources/list', 'resources/read', { uri: 'test://secret/b' });
  assert.equal(missing.lists, 1, 'a missing URI is listed for once');
  assert.equal(hidden.lists, missing.lists, 'a hidden URI makes the same list');
  assert.equal(JSON.stringify(hidden.error).replace('test://secret/b', 'X'), JSON.stringify(missing.error).replace('test://public/nope', 'X'));
});

test('a completion about a hidden template makes the catalog list templates again, as one about a missing template does (completion.mdx §Data Types)', async () => {
  const argument = { name: 'id', value: '' };
  const missing = await counted('resources/templates/list', 'completion/complete', { ref: { type: 'ref/resource', uri: 'test://public/nope/{id}' }, argument });
  const hidden = await counted('resources/templates/list', 'completion/complete', { ref: { type: 'ref/resource', uri: 'test://secret/items/{id}' }, argument });
  assert.equal(missing.lists, 1, 'a missing template is listed for once');
  assert.equal(hidden.lists, missing.lists, 'a hidden template makes the same list');
  assert.equal(JSON.stringify(hidden.error).replace('test://secret/items/{id}', 'X'), JSON.stringify(missing.error).replace('test://public/nope/{id}', 'X'));
});
