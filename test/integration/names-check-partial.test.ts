// A single upstream behind access rules: Gatehouse lists it itself first (the names check) to decide
// whether clients' lists may pass straight through, so that no client ever sees an unsafe or hidden name.
// Until 3 December a names check whose list failed was judged on the empty list it got: "unchanged", so the
// client's own list passed straight through and showed a tool the rules hide from everyone.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('a hidden tool is never listed, even when the names check got no list', async () => {
  let lists = 0;
  const up = await startFakeUpstream(
    (_req, res, body) => {
      const msg = JSON.parse(body) as { id: unknown; method: string; params?: { name?: string } };
      if (msg.method === 'tools/list' && ++lists === 1) {
        return void res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32603, message: 'warming up' } }));
      }
      const result =
        msg.method === 'tools/list'
          ? { tools: [{ name: 'search', inputSchema: { type: 'object' } }, { name: 'admin_drop', inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 0 }
          : msg.method === 'prompts/list'
            ? { prompts: [], resultType: 'complete', ttlMs: 0 }
            : { content: [{ type: 'text', text: `ran ${msg.params?.name}` }], resultType: 'complete' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    },
    { handshake: 'modern' },
  );
  cleanups.push(() => up.close());
  const gw = await startGateway({ upstreams: [{ name: 'a', url: up.url, era: 'modern' }], policy: { rules: [{ id: 'no-admin', access: 'deny', tools: ['a/admin_*'] }, { id: 'everyone', access: 'allow', tools: ['*'] }] } });
  cleanups.push(() => gw.close());
  for (let i = 1; i <= 3; i++) {
    const r = modernRequest(i, 'tools/list', {});
    const names = ((await post(gw.url, r.body, r.headers)).json().result?.tools ?? []).map((t: { name: string }) => t.name);
    assert.ok(!names.includes('admin_drop'), `list ${i}: ${names.join(', ')}`);
  }
  const call = modernRequest(9, 'tools/call', { name: 'admin_drop', arguments: {} });
  const answer = (await post(gw.url, call.body, call.headers)).text;
  assert.doesNotMatch(answer, /ran admin_drop/);
});
