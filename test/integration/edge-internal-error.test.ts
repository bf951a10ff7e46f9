// The edge's last resort: an error no stage turned into a refusal (a bug) is answered 500, "Internal gateway
// error", without its detail. Once the body was read its id is known, and an error response carries the
// request's id unless it could not be read (JSON-RPC 2.0 §5; 2026-07-28 basic/index.mdx §Error Responses):
// the client can tell which request failed. A stand-in DNS resolver that breaks its contract (a string, not
// the list of addresses it promises) makes the egress stage throw, the way any stage's bug would.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

let up: FakeUpstream;
let gw: TestGateway;

before(async () => {
  up = await startFakeUpstream(
    (_req, res, body) => {
      const msg = JSON.parse(body) as { id?: unknown; method: string };
      if (msg.id === undefined) return void res.writeHead(202).end();
      const result = msg.method === 'tools/list' ? { tools: [{ name: 'fetch', inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 0, cacheScope: 'public' } : { content: [], resultType: 'complete' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    },
    { handshake: 'modern' },
  );
  gw = await startGateway(
    { upstreams: [{ name: 'up', url: up.url, era: 'modern' }], policy: { egress: [{ id: 'lab', allow: { cidrs: ['10.0.0.0/8'] } }] } },
    { resolveHost: async () => '10.0.0.1' as unknown as string[] },
  );
});
after(async () => {
  await gw?.close();
  await up?.close();
});

for (const id of [7, 'call-seven']) {
  test(`an internal error after the body was read answers 500 with the request's id (${JSON.stringify(id)}), not null`, async () => {
    const m = modernRequest(id as number, 'tools/call', { name: 'fetch', arguments: { url: 'http://lab.example.test/' } });
    const res = await post(gw.url, m.body, m.headers);
    assert.equal(res.status, 500, res.text);
    const body = res.json();
    assert.equal(body.error.code, -32603);
    assert.equal(body.error.message, 'Internal gateway error');
    assert.equal(body.id, id, res.text);
    assert.ok(gw.logs.some((l) => l.msg === 'unhandled error on the MCP endpoint'), 'the operator is told');
    assert.equal(up.requests.filter((r) => r.body.includes('lab.example.test')).length, 0, 'nothing reached the upstream');
  });
}
