// A member whose tools/list pages repeat a tool: the spec allows it (2026-07-28/server/utilities/caching.mdx
// §Interaction with Pagination: "If the underlying data changes between page fetches, clients may observe
// duplicates or gaps"), and a server whose list shifts while Gatehouse reads it gives one. Until 4 December
// the catalog took both copies as two tools with the same ref: neither kept its name (both were given the
// digest name, so a client that had cached `pages_search` got -32602), and the merged list showed the tool
// twice under one name (2026-07-28/server/tools.mdx §Tool Names: unique per server). A ref is now taken once.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const EVERYTHING = { name: 'everything', command: [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] };

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('a tool repeated on a later page is listed once, under its own name, and is called', async () => {
  const calls: string[] = [];
  const up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string; params: { cursor?: string; name?: string } };
    const reply = (result: Record<string, unknown>): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', ...result } }));
    if (msg.method === 'tools/call') {
      calls.push(msg.params.name!);
      return reply({ content: [{ type: 'text', text: `called ${msg.params.name}` }] });
    }
    if (msg.method !== 'tools/list') return reply({});
    // The list shifted between the pages: `search` comes again on the second.
    if (msg.params.cursor === undefined) return reply({ tools: [{ name: 'alpha', inputSchema: { type: 'object' } }, { name: 'search', inputSchema: { type: 'object' } }], nextCursor: 'p2', ttlMs: 0, cacheScope: 'public' });
    return reply({ tools: [{ name: 'search', inputSchema: { type: 'object' } }, { name: 'zulu', inputSchema: { type: 'object' } }], ttlMs: 0, cacheScope: 'public' });
  }, { handshake: 'modern' });
  cleanups.push(() => up.close());
  const gw = await startGateway({ upstreams: [{ name: 'pages', url: up.url }, EVERYTHING] });
  cleanups.push(() => gw.close());

  const list = modernRequest(1, 'tools/list');
  const tools = (await post(gw.url, list.body, list.headers)).json().result.tools as Array<{ name: string; _meta?: Record<string, unknown> }>;
  const ours = tools.filter((t) => t._meta?.['dev.gatehouse/tool_ref']?.toString().startsWith('pages/')).map((t) => t.name);
  assert.deepEqual(ours, ['pages_alpha', 'pages_search', 'pages_zulu'], JSON.stringify(ours));
  assert.equal(new Set(tools.map((t) => t.name)).size, tools.length, 'every name once');
  const call = modernRequest(2, 'tools/call', { name: 'pages_search', arguments: {} });
  assert.equal((await post(gw.url, call.body, call.headers)).json().result?.content?.[0]?.text, 'called search');
  assert.deepEqual(calls, ['search']);
});
