// An upstream that fails a call is counted in gatehouse_refusals_total under the failure's code, as the
// request line and gatehouse_tool_calls_total name it (refusal upstream_*, stage upstream). That held for a
// failure the adapter found (unreachable, timed out), but not for one found in the answer once it came: a
// 2xx body that is no JSON-RPC response to the request (upstream_bad_response) was logged and counted in
// tool_calls_total, and never in gatehouse_refusals_total, nor as a refusal event on the call's span. It is
// now published as the upstream stage's refusal like the others, once (metrics-readme.test.ts holds an
// unreachable upstream, published by the upstream stage itself, to one count).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';

let up: FakeUpstream;
let gw: TestGateway;

before(async () => {
  // tools/call is answered 200 with JSON that is no JSON-RPC response.
  up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const name = (msg as { params?: { name?: string } }).params?.name;
    if (msg.method === 'tools/call' && name === 'add') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"not":"an answer"}');
    // `typed` answers with output its outputSchema refuses: the output check's refusal, made through the final answer.
    const result = msg.method === 'tools/list'
      ? { tools: [{ name: 'add', inputSchema: { type: 'object' } }, { name: 'typed', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } }], resultType: 'complete', ttlMs: 60_000 }
      : msg.method === 'tools/call' ? { content: [{ type: 'text', text: '{}' }], structuredContent: { n: 'not a number' }, resultType: 'complete' } : { resultType: 'complete' };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  }, { handshake: 'modern' });
  gw = await startGateway({ upstreams: [{ name: 'calc', url: up.url }], metrics: { enabled: true, port: 0 }, tools: { outputValidation: 'enforce' } });
});
after(async () => {
  await gw?.close();
  await up?.close();
});

function valueOf(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('a body that is no answer is counted among the refusals once, as the log and the tool counter name it', async () => {
  const list = modernRequest(1, 'tools/list');
  assert.equal((await post(gw.url, list.body, list.headers)).status, 200);
  const call = modernRequest(2, 'tools/call', { name: 'add', arguments: {} });
  const res = await post(gw.url, call.body, call.headers);
  assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE', res.text);
  const text = await (await request(gw.gateway.metricsUrl!)).body.text();
  const line = gw.logs.find((l) => l.msg === 'request' && l.method === 'tools/call');
  assert.equal(line?.refusal, 'upstream_bad_response');
  assert.equal(line?.stage, 'upstream');
  assert.equal(valueOf(text, 'gatehouse_tool_calls_total{tool="add",outcome="upstream_error",error_code="upstream_bad_response"}'), 1);
  assert.equal(valueOf(text, 'gatehouse_refusals_total{reason="upstream_bad_response"}'), 1, text.split('\n').filter((l) => l.includes('refusals_total')).join('\n'));
});

test("the output check's refusal, published by its stage, is counted once", async () => {
  const call = modernRequest(3, 'tools/call', { name: 'typed', arguments: {} });
  const res = await post(gw.url, call.body, call.headers);
  assert.match(res.text, /invalid_output/, res.text);
  const text = await (await request(gw.gateway.metricsUrl!)).body.text();
  assert.equal(valueOf(text, 'gatehouse_refusals_total{reason="invalid_output"}'), 1, text.split('\n').filter((l) => l.includes('refusals_total')).join('\n'));
});
