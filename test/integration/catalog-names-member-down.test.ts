// Public names while a member is down. Names come from the set of refs (src/catalog/README.md §Public
// names), and until 4 December a member that failed to answer a list left its refs out of that set: with
// tools.naming.prefix: never, `a/search` and `b/search` were `search_<digest>` each, and while b was down a's
// tool became `search`, to go back to its digest name when b returned. A client that had listed in
// either moment called a name that no longer existed (-32602), and one that had cached a's `x_y` while b
// (with its own `x_y`) was down reached b's tool once b was back. A member whose list fails now keeps the
// refs of its last whole list in the naming set (not in the list), so the others' names hold.
// Spec: 2026-07-28/server/tools.mdx §Tool Names (proxies SHOULD disambiguate), §Error Handling (-32602).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A 2026-07-28 member listing `search` and `x.y` (or `x_y`); a fake only so that the test can stop it. */
async function member(other: string): Promise<FakeUpstream> {
  const up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string };
    const result = msg.method === 'tools/list' ? { tools: [{ name: 'search', inputSchema: { type: 'object' } }, { name: other, inputSchema: { type: 'object' } }], ttlMs: 0, cacheScope: 'public' } : {};
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', ...result } }));
  }, { handshake: 'modern' });
  cleanups.push(() => up.close());
  return up;
}

test('a member that goes down leaves the other members\' names as they were', async () => {
  const a = await member('x.y');
  const b = await member('x_y');
  const gw = await startGateway({ upstreams: [{ name: 'a', url: a.url }, { name: 'b', url: b.url }], tools: { naming: { prefix: 'never' } } });
  cleanups.push(() => gw.close());
  const names = async (): Promise<Record<string, string>> => {
    const req = modernRequest(1, 'tools/list');
    const tools = (await post(gw.url, req.body, req.headers)).json().result.tools as Array<{ name: string; _meta: Record<string, string> }>;
    return Object.fromEntries(tools.map((t) => [t._meta['dev.gatehouse/tool_ref']!, t.name]));
  };
  const both = await names();
  // a is first in the config: its search keeps the name, b's gets the digest (before 5 December, both did).
  assert.equal(both['a/search'], 'search');
  assert.match(both['b/search']!, /^search_[0-9a-f]{8}$/);
  assert.match(both['a/x.y']!, /^x_y_[0-9a-f]{8}$/);
  assert.equal(both['b/x_y'], 'x_y');

  const { port } = b.server.address() as AddressInfo;
  await b.close();
  const aAlone = await names();
  assert.equal(aAlone['b/search'], undefined, 'the member that is down is not listed');
  assert.equal(aAlone['a/search'], both['a/search'], 'a/search keeps its name');
  assert.equal(aAlone['a/x.y'], both['a/x.y'], 'a/x.y keeps its name: x_y is still b\'s');

  await new Promise<void>((r) => b.server.listen(port, '127.0.0.1', r));
  assert.deepEqual(await names(), both, 'the same names once b is back');
});
