// `gatehouse_circuit_state{breaker,target}` shows each circuit breaker as this replica last saw it (README,
// Metrics). A reload that removes or renames a breaker (policy.breakers[].id) ends it: no call is judged by
// it any more. Until 4 December its series stayed, with the value last seen, for as long as the process
// ran: a breaker open when it was removed was reported open for good, and an alert on
// `gatehouse_circuit_state == 1` fired for a breaker that no longer existed.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { validateConfigObject } from '../../src/config/load.js';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { post } from '../helpers/http.js';

let up: FakeUpstream;
let gw: TestGateway;
/** While true, the upstream fails every tools/call with HTTP 500. */
let failing = false;

const base = (breakers: unknown[]) => ({
  upstreams: [{ name: 'up', url: up.url, era: 'legacy' }],
  metrics: { enabled: true, port: 0 },
  policy: { breakers },
});

before(async () => {
  up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'gauge-fake', version: '1' } });
    if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [{ name: 'real', inputSchema: { type: 'object' } }] });
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'tools/call' && failing) return void res.writeHead(500, { 'content-type': 'text/plain' }).end('down');
    jsonResult(res, body, { content: [{ type: 'text', text: 'ok' }] });
  });
  gw = await startGateway(base([{ id: 'before-reload', per: 'upstream', consecutiveFailures: 1, coolDownSeconds: 600 }]));
});
after(async () => {
  await gw.close();
  await up.close();
});

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
let n = 0;
const call = () => post(gw.url, JSON.stringify({ jsonrpc: '2.0', id: ++n, method: 'tools/call', params: { name: 'real', arguments: {} } }), HEADERS);

async function circuitSeries(): Promise<string[]> {
  const text = await (await request(gw.gateway.metricsUrl!)).body.text();
  return text.split('\n').filter((l) => l.startsWith('gatehouse_circuit_state{'));
}

test('a breaker a reload removes leaves no series behind; the one that replaces it has its own', async () => {
  failing = true;
  try {
    assert.equal((await call()).status, 502);
    // Recorded on the side: the next call finds the circuit open.
    let refused = '';
    for (let i = 0; i < 40 && refused !== 'upstream_unavailable'; i++) {
      refused = (await call()).json().result?.structuredContent?.error?.code ?? '';
      if (refused !== 'upstream_unavailable') await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(refused, 'upstream_unavailable');
  } finally {
    failing = false;
  }
  assert.deepEqual(await circuitSeries(), ['gatehouse_circuit_state{breaker="before-reload",target="up"} 1']);

  const next = validateConfigObject({ ...base([{ id: 'after-reload', per: 'upstream', consecutiveFailures: 1, coolDownSeconds: 600 }]), listen: { host: '127.0.0.1', port: 0 }, auth: { anonymous: true }, idempotency: { requireKeys: false } }, 'test');
  assert.deepEqual(await gw.gateway.reload(next), [], 'the reload is applied');
  assert.deepEqual(await circuitSeries(), [], 'the removed breaker is no longer reported (open for good)');
  assert.equal((await call()).json().result?.content?.[0]?.text, 'ok', 'the new breaker has its own circuit, closed');
  assert.deepEqual(await circuitSeries(), ['gatehouse_circuit_state{breaker="after-reload",target="up"} 0']);
});
