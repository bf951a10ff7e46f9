// The catalog is the server a modern client talks to: every result it makes names it the same way.
// Spec: 2026-07-28/basic/index.mdx §_meta, "Per-response protocol fields" (servers SHOULD include
// io.modelcontextprotocol/serverInfo in every result's _meta, to identify themselves without relying on any
// prior connection state). Upstreams: two real v2 SDK servers.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const one = await startModernServer();
const two = await startModernServer();
const gw = await startGateway({ upstreams: [{ name: 'one', url: one.url, era: 'modern' }, { name: 'two', url: two.url, era: 'modern' }] });
after(async () => {
  await gw.close();
  await one.close();
  await two.close();
});

const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

async function resultOf(method: string, params: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const req = modernRequest(1, method, params);
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(res.status, 200, res.text);
  const result = res.json().result as Record<string, any> | undefined;
  assert.ok(result, res.text);
  return result;
}

test('basic/index.mdx §_meta Per-response protocol fields: the lists the catalog merges carry the serverInfo its server/discover gives', async () => {
  const discover = await resultOf('server/discover');
  const gatehouse = discover._meta?.[SERVER_INFO];
  assert.equal(gatehouse?.name, 'gatehouse', JSON.stringify(discover._meta));
  for (const method of ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']) {
    const result = await resultOf(method);
    assert.deepEqual(result._meta?.[SERVER_INFO], gatehouse, `${method}: ${JSON.stringify(result._meta)}`);
  }
});
