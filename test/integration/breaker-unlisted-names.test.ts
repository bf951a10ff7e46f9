// Circuit breakers and tool names no list gave. One upstream served by pass-through answers such names
// itself (docs/lifecycle.md), so they reach the breaker stage with a ref made of the caller's own words.
// Until 3 December a breaker `per: tool` kept a circuit, a store row and a `gatehouse_circuit_state` series
// for each of them: a caller inventing names grew /metrics by one series per name (up to 10,000). Now such
// calls are judged by the per-upstream breakers alone; listed tools keep their own circuits.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { post } from '../helpers/http.js';

let up: FakeUpstream;
let gw: TestGateway;
/** While true, the upstream fails every tools/call with HTTP 500. */
let failing = false;

before(async () => {
  up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'breaker-fake', version: '1' } });
    if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [{ name: 'real', inputSchema: { type: 'object' } }] });
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'tools/call' && failing) return void res.writeHead(500, { 'content-type': 'text/plain' }).end('down');
    jsonResult(res, body, { content: [{ type: 'text', text: 'ok' }] });
  });
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'legacy' }],
    metrics: { enabled: true, port: 0 },
    policy: {
      breakers: [
        { id: 'per-tool', per: 'tool', consecutiveFailures: 50 },
        { id: 'per-upstream', per: 'upstream', consecutiveFailures: 2, coolDownSeconds: 600 },
      ],
    },
  });
});
after(async () => {
  await gw.close();
  await up.close();
});

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
let n = 0;
function call(name: string) {
  return post(gw.url, JSON.stringify({ jsonrpc: '2.0', id: ++n, method: 'tools/call', params: { name, arguments: {} } }), HEADERS);
}

async function circuitSeries(): Promise<string[]> {
  const text = await (await request(gw.gateway.metricsUrl!)).body.text();
  return text.split('\n').filter((l) => l.startsWith('gatehouse_circuit_state{'));
}

test('200 made-up names leave no circuit series behind; a listed tool has its own', async () => {
  // Listed first, as a client does: the catalog's routes then know the tool.
  const listed = await post(gw.url, JSON.stringify({ jsonrpc: '2.0', id: ++n, method: 'tools/list', params: {} }), HEADERS);
  assert.deepEqual(listed.json().result?.tools?.map((t: { name: string }) => t.name), ['real'], listed.text);
  assert.equal((await call('real')).json().result?.content?.[0]?.text, 'ok');
  for (let i = 0; i < 200; i++) assert.equal((await call(`made_up_${i}`)).status, 200);
  const series = await circuitSeries();
  assert.ok(!series.some((l) => l.includes('made_up_')), series.slice(0, 5).join('\n'));
  assert.ok(series.some((l) => l.includes('breaker="per-tool",target="up/real"')), series.join('\n'));
});

test('the per-upstream breaker still judges them: two failures open it, and the next made-up name is refused at once', async () => {
  failing = true;
  try {
    for (let i = 0; i < 2; i++) assert.equal((await call(`failing_${i}`)).status, 502);
    const before = up.requests.length;
    const refused = await call('failing_next');
    assert.equal(refused.json().result?.structuredContent?.error?.code, 'upstream_unavailable', refused.text);
    assert.equal(refused.json().result.structuredContent.error.rule, 'per-upstream');
    assert.equal(up.requests.length, before, 'refused before the upstream');
  } finally {
    failing = false;
  }
});
