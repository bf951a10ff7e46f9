// With several upstreams (the catalog), `gatehouse_requests_total{upstream}` and the request line's
// `upstream` said `catalog` for every call, whichever upstream served it: the dashboard's "requests by
// upstream and outcome" showed one line, and an upstream that failed every call could not be told from its
// healthy neighbours without the traces (whose spans did name it). A call the catalog routed to a member
// is now counted and logged under that member's name; what the catalog answers itself (the merged lists,
// a name it does not know) stays `catalog`.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';

let healthy: FakeUpstream;
let failing: FakeUpstream;
let gw: TestGateway;

/** A modern upstream with one tool; `fails`: its calls are answered HTTP 500. */
function upstreamWith(tool: string, fails: boolean): Promise<FakeUpstream> {
  return startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'tools/call' && fails) return void res.writeHead(500, { 'content-type': 'text/plain' }).end('down');
    const result = msg.method === 'tools/list'
      ? { tools: [{ name: tool, inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 60_000 }
      : msg.method === 'tools/call' ? { content: [{ type: 'text', text: 'ok' }], resultType: 'complete' } : { resultType: 'complete' };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  }, { handshake: 'modern' });
}

before(async () => {
  healthy = await upstreamWith('add', false);
  failing = await upstreamWith('fetch', true);
  gw = await startGateway({ upstreams: [{ name: 'calc', url: healthy.url }, { name: 'web', url: failing.url }], metrics: { enabled: true, port: 0 } });
});
after(async () => {
  await gw?.close();
  await healthy?.close();
  await failing?.close();
});

function valueOf(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('a routed call is counted and logged under the upstream that served it', async () => {
  const list = modernRequest(1, 'tools/list');
  assert.equal((await post(gw.url, list.body, list.headers)).status, 200);
  const ok = modernRequest(2, 'tools/call', { name: 'calc_add', arguments: {} });
  assert.equal((await post(gw.url, ok.body, ok.headers)).status, 200);
  const bad = modernRequest(3, 'tools/call', { name: 'web_fetch', arguments: {} });
  await post(gw.url, bad.body, bad.headers);
  const text = await (await request(gw.gateway.metricsUrl!)).body.text();
  const series = text.split('\n').filter((l) => l.startsWith('gatehouse_requests_total{')).join('\n');
  assert.equal(valueOf(text, 'gatehouse_requests_total{method="tools/call",era="modern",upstream="calc",outcome="ok"}'), 1, series);
  assert.equal(valueOf(text, 'gatehouse_requests_total{method="tools/call",era="modern",upstream="web",outcome="upstream_error"}'), 1, series);
  // The merged list is the catalog's own answer.
  assert.equal(valueOf(text, 'gatehouse_requests_total{method="tools/list",era="modern",upstream="catalog",outcome="ok"}'), 1, series);
  const lines = gw.logs.filter((l) => l.msg === 'request' && l.method === 'tools/call');
  assert.deepEqual(lines.map((l) => [l.tool, l.upstream, l.outcome]), [['calc_add', 'calc', 'ok'], ['web_fetch', 'web', 'upstream_error']]);
});
