// An upstream whose list continues under the cursor "" (an empty string): Gatehouse, as that upstream's
// client, reads on rather than taking it for the end. Spec: 2026-07-28/server/utilities/pagination.mdx
// §Implementation Guidelines 3 (clients MUST treat cursors as opaque: "an empty string is a valid cursor and
// thus MUST NOT be treated as the end of results"). A fake modern upstream, since the SDK servers never page.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const complete = { resultType: 'complete', ttlMs: 0, cacheScope: 'public' };
/** tools/list in two pages: `first`, then (under the cursor "") `second`; each tool says its name when called. */
const paged = await startFakeUpstream((_req, res, body) => {
  const msg = JSON.parse(body) as { id: unknown; method: string; params: { cursor?: string; name?: string } };
  const reply = (result: Record<string, unknown>): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  if (msg.method === 'tools/list') {
    if (msg.params.cursor === undefined) return reply({ tools: [{ name: 'first', inputSchema: { type: 'object' } }], nextCursor: '', ...complete });
    if (msg.params.cursor === '') return reply({ tools: [{ name: 'second', inputSchema: { type: 'object' } }], ...complete });
  }
  if (msg.method === 'tools/call') return reply({ content: [{ type: 'text', text: `ran ${String(msg.params.name)}` }], resultType: 'complete' });
  reply({ resultType: 'complete' });
}, { handshake: 'modern' });
const other = await startFakeUpstream((_req, res, body) => {
  const msg = JSON.parse(body) as { id: unknown; method: string };
  const result = msg.method === 'tools/list' ? { tools: [{ name: 'other', inputSchema: { type: 'object' } }], ...complete } : { resultType: 'complete' };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
}, { handshake: 'modern' });
const catalog = await startGateway({ upstreams: [{ name: 'paged', url: paged.url }, { name: 'other', url: other.url }] });
const prefixed = await startGateway({ upstreams: [{ name: 'paged', url: paged.url }], tools: { naming: { prefix: 'always' } } });
after(async () => {
  await catalog.close();
  await prefixed.close();
  await paged.close();
  await other.close();
});

async function toolNames(gw: TestGateway): Promise<string[]> {
  const req = modernRequest(1, 'tools/list');
  const res = await post(gw.url, req.body, req.headers);
  return (res.json().result.tools as Array<{ name: string }>).map((t) => t.name);
}

async function call(gw: TestGateway, name: string): Promise<Record<string, any>> {
  const req = modernRequest(2, 'tools/call', { name, arguments: {} });
  return (await post(gw.url, req.body, req.headers)).json();
}

for (const [label, gw] of [['a catalog of two upstreams', catalog], ['one upstream whose names are prefixed', prefixed]] as const) {
  test(`pagination.mdx: ${label} lists the page after nextCursor "", and routes calls to its tools`, async () => {
    const names = await toolNames(gw);
    assert.ok(names.includes('paged_first'), names.join());
    assert.ok(names.includes('paged_second'), `the second page is read: ${names.join()}`);
    assert.equal((await call(gw, 'paged_second')).result?.content?.[0]?.text, 'ran second');
  });
}
