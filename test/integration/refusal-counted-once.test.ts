// One refused call is one refusal. A stage refuses a tools/call (here the access stage: a deny rule hides
// the tool, unknown_tool) and publishes it; the audit then fails to append the refusal's record, and the client gets 503
// GW_ERR_STATE_UNAVAILABLE in its place (DESIGN.md §7: no answer leaves unrecorded). Before, the audit
// published that substitution as a second refusal, so gatehouse_refusals_total counted the call twice
// (the stage's reason and state_unavailable; twice state_unavailable when the state stage refused it for a
// store that was down). The refusal the call is counted by is the stage's, which refused it; the request
// line still says what the client got (state_unavailable, stage audit).
//
// The idempotency stage likewise: the output check refuses an answer (invalid_output) and publishes it,
// then the refusal's idempotency record cannot be completed and the answer is withheld; that withholding
// was a second refusal too.
//
// Real redis-server behind a relay that drops the connection once Redis answered a chosen command (the
// audit append, the idempotency record's completion). A real MCP server upstream; for the output check a
// fake one, since it must answer against its own outputSchema on purpose (the SDKs check their output).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedisRelay, type RedisRelay } from '../helpers/redis-relay.js';
import { waitFor } from '../helpers/otlp.js';

let up: CountingUpstream;
let redis: TestRedis;
let relay: RedisRelay;
let gw: TestGateway;
/** Its `shape` tool answers a number where its outputSchema wants an object member `n` (tools.outputValidation: enforce). */
let shaper: FakeUpstream;
let keyed: TestGateway;

before(async () => {
  up = await startCountingUpstream('modern');
  redis = await startRedis();
  relay = await startRedisRelay(redis.port);
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    store: { kind: 'redis', url: relay.url, keyPrefix: 'counted-once:', commandTimeoutMs: 2_000 },
    metrics: { enabled: true, port: 0 },
    policy: { rules: [{ access: 'deny', tools: ['up/record'] }, { access: 'allow', tools: ['*'] }] },
  });
  shaper = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string; arguments?: { item?: string } } };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'tools/list') {
      const outputSchema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
      return jsonResult(res, body, { tools: [{ name: 'shape', inputSchema: { type: 'object' }, outputSchema }, { name: 'lookup', inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 0, cacheScope: 'public' });
    }
    if (msg.method !== 'tools/call') return jsonResult(res, body, { resultType: 'complete' });
    const item = msg.params?.arguments?.item ?? '';
    const structuredContent = msg.params?.name === 'shape' ? { n: `not a number ${item}` } : undefined;
    jsonResult(res, body, { content: [{ type: 'text', text: `answered ${item}` }], ...(structuredContent ? { structuredContent } : {}), resultType: 'complete' });
  }, { handshake: 'modern' });
  keyed = await startGateway({
    upstreams: [{ name: 'up', url: shaper.url, era: 'modern' }],
    store: { kind: 'redis', url: relay.url, keyPrefix: 'counted-once-keyed:', commandTimeoutMs: 2_000 },
    metrics: { enabled: true, port: 0 },
    tools: { outputValidation: 'enforce' },
    idempotency: { requireKeys: false, tools: ['up/shape'] },
  });
});
after(async () => {
  await keyed?.close();
  await shaper?.close();
  await gw?.close();
  await relay?.close();
  await up?.close();
  await redis?.stop();
});

let n = 0;

/** The store is warm (connection ready, scripts loaded) before the call under test: a lookup answered 200. */
async function warmUp(on: TestGateway = gw): Promise<void> {
  let status = 0;
  for (let i = 0; i < 40 && status !== 200; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 250));
    const warm = modernRequest(++n, 'tools/call', { name: 'lookup', arguments: { item: `warm-${n}` } });
    status = (await post(on.url, warm.body, warm.headers)).status;
  }
  assert.equal(status, 200, 'the store serves');
}

/** gatehouse_refusals_total by reason. */
async function refusals(on: TestGateway = gw): Promise<Map<string, number>> {
  const text = await (await request(on.gateway.metricsUrl!)).body.text();
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^gatehouse_refusals_total\{reason="([^"]+)"\} (\d+)$/gm)) counts.set(m[1]!, Number(m[2]));
  return counts;
}
const total = (counts: Map<string, number>): number => [...counts.values()].reduce((a, b) => a + b, 0);

test('a stage refusal whose audit record could not be kept is counted once, under the stage reason', async () => {
  await warmUp();
  const before = await refusals();
  relay.dropAfter('deniedauditlost1');
  const req = modernRequest(++n, 'tools/call', { name: 'record', arguments: { item: 'deniedauditlost1' } });
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(relay.dropped, 1, 'the audit append reached Redis and its answer was lost');
  assert.equal(res.status, 503, res.text);
  assert.equal(res.json().error.data.code, 'GW_ERR_STATE_UNAVAILABLE');
  const callId = String(res.headers['x-gatehouse-call-id']);
  const line = await waitFor('the request line', () => gw.logs.find((l) => l.msg === 'request' && l.callId === callId));
  assert.equal(line.outcome, 'refused');
  assert.equal(line.refusal, 'state_unavailable', 'the line says what the client got');
  assert.equal(line.stage, 'audit');
  const after = await refusals();
  assert.equal(total(after) - total(before), 1, `one refusal for one call: ${JSON.stringify([...before])} → ${JSON.stringify([...after])}`);
  assert.equal((after.get('unknown_tool') ?? 0) - (before.get('unknown_tool') ?? 0), 1, 'the stage reason');
  assert.equal((after.get('state_unavailable') ?? 0) - (before.get('state_unavailable') ?? 0), 0, 'not the substitution');
  assert.equal(up.executions.length, 0, 'the denied call never ran');
});

test('an output refusal whose idempotency record could not be completed is counted once, under the stage reason', async () => {
  await warmUp(keyed);
  const before = await refusals(keyed);
  const droppedBefore = relay.dropped;
  // The completion is the one command that carries the refusal's message (the audit record has its code only).
  relay.dropAfter('does not match its outputSchema');
  const req = modernRequest(++n, 'tools/call', { name: 'shape', arguments: { item: 'keyedlost1' }, _meta: { idempotencyKey: 'counted-once-key-0001' } });
  const res = await post(keyed.url, req.body, req.headers);
  assert.equal(relay.dropped, droppedBefore + 1, `the completion reached Redis and its answer was lost: ${res.status} ${res.text}`);
  assert.equal(res.status, 503, res.text);
  assert.equal(res.json().error.data.code, 'GW_ERR_STATE_UNAVAILABLE');
  const callId = String(res.headers['x-gatehouse-call-id']);
  const line = await waitFor('the request line', () => keyed.logs.find((l) => l.msg === 'request' && l.callId === callId));
  assert.equal(line.refusal, 'state_unavailable', 'the line says what the client got');
  // The audit append right after may fail too, on the connection the relay dropped: either stage withheld it.
  assert.ok(line.stage === 'idempotency' || line.stage === 'audit', String(line.stage));
  const after = await refusals(keyed);
  assert.equal(total(after) - total(before), 1, `one refusal for one call: ${JSON.stringify([...before])} → ${JSON.stringify([...after])}`);
  assert.equal((after.get('invalid_output') ?? 0) - (before.get('invalid_output') ?? 0), 1, 'the stage reason');
});
