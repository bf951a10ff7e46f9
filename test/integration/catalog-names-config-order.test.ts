// Two upstreams whose tools' public names are the same and already safe: `a/search` and `b/search` with
// `tools.naming.prefix: never`, or upstreams `a` and `a_b` with tools `b_c` and `c`, which the prefix makes
// `a_b_c` both (prefix auto, the default with several upstreams). Neither needs a character replaced, so the
// rule "the already-safe name keeps it" chose neither, and both got digest names. The names then depended on
// which members had answered: while `b` had never answered (down since the start), `a/search` was `search`;
// once `b` answered, `search_<digest>`, and a client that had cached `search` got -32602. The upstream
// earlier in the config now keeps the name and the later one gets the digest (src/catalog/README.md,
// public names), so the names clients see first stay.
// Spec: 2026-07-28/server/tools.mdx §Tool Names (unique within a server); caching.mdx (clients keep lists).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { digestOf } from '../../src/catalog/public-names.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

/** A modern upstream with one tool; its tools/list fails while `down()` says so. */
async function upstream(tool: string, down: () => boolean): Promise<FakeUpstream> {
  return startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string; params?: { name?: string } };
    res.setHeader('content-type', 'application/json');
    const answer = (result: Record<string, unknown>): void => void res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', ...result } }));
    if (msg.method === 'tools/list') {
      if (down()) return void res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32603, message: 'list unavailable' } }));
      return answer({ tools: [{ name: tool, inputSchema: { type: 'object' } }], ttlMs: 0 });
    }
    if (msg.method.endsWith('/list')) return answer({ [msg.method === 'resources/templates/list' ? 'resourceTemplates' : msg.method.split('/')[0]!]: [], ttlMs: 0 });
    answer({ content: [{ type: 'text', text: `ran ${msg.params?.name}` }] });
  }, { handshake: 'modern' });
}

async function namesByRef(gw: TestGateway): Promise<Record<string, string>> {
  const { body, headers } = modernRequest('list', 'tools/list');
  const tools = (await post(gw.url, body, headers, AbortSignal.timeout(10_000))).json().result.tools as Array<{ name: string; _meta: Record<string, string> }>;
  return Object.fromEntries(tools.map((t) => [t._meta['dev.gatehouse/tool_ref']!, t.name]));
}

const cases = [
  { mode: 'never', first: { upstream: 'a', tool: 'search' }, second: { upstream: 'b', tool: 'search' }, name: 'search' },
  { mode: 'auto', first: { upstream: 'a', tool: 'b_c' }, second: { upstream: 'a_b', tool: 'c' }, name: 'a_b_c' },
] as const;

for (const c of cases) {
  describe(`prefix ${c.mode}: ${c.first.upstream}/${c.first.tool} and ${c.second.upstream}/${c.second.tool} are both "${c.name}"`, () => {
    let secondDown = true;
    let first: FakeUpstream;
    let second: FakeUpstream;
    let gw: TestGateway;
    before(async () => {
      first = await upstream(c.first.tool, () => false);
      second = await upstream(c.second.tool, () => secondDown);
      gw = await startGateway({ upstreams: [{ name: c.first.upstream, url: first.url }, { name: c.second.upstream, url: second.url }], tools: { naming: { prefix: c.mode } } });
    });
    after(async () => {
      await gw.close();
      await first.close();
      await second.close();
    });

    test('the upstream first in the config keeps the name, before and after the other answers; the other gets the digest', async () => {
      const firstRef = `${c.first.upstream}/${c.first.tool}`;
      const secondRef = `${c.second.upstream}/${c.second.tool}`;
      assert.deepEqual(await namesByRef(gw), { [firstRef]: c.name });
      secondDown = false;
      const both = await namesByRef(gw);
      assert.equal(both[firstRef], c.name, 'the name a client saw first still reaches the same tool');
      assert.equal(both[secondRef], `${c.name}_${digestOf({ upstream: c.second.upstream, name: c.second.tool })}`);
      // And it is a name the call reaches by.
      const { body, headers } = modernRequest('call', 'tools/call', { name: c.name, arguments: {} });
      const ran = (await post(gw.url, body, headers, AbortSignal.timeout(10_000))).json();
      assert.equal(ran.result?.content?.[0]?.text, `ran ${c.first.tool}`, JSON.stringify(ran));
      // Stable over further lists.
      assert.deepEqual(await namesByRef(gw), both);
    });
  });
}
