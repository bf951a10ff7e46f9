// When Gatehouse cannot keep what a call's answer needs kept, the client gets 503 GW_ERR_STATE_UNAVAILABLE
// in place of the answer. The audit (DESIGN.md §7: the record is written before the answer leaves): when
// Gatehouse cannot record a call (the audit append fails: DESIGN.md §7, the record is written before
// the answer leaves), the client gets 503 GW_ERR_STATE_UNAVAILABLE in place of the answer, said by the
// `audit` stage. That substitution is a refusal like any other stage's: it is published on the refused
// channel (gatehouse_refusals_total counts it) and the request line names its code and stage, whether the
// answer it replaced was one JSON body or a stream relayed event by event (the answer is then a final SSE
// event, 2025-11-25/basic/transports.mdx §Sending Messages to the Server: the stream ends with the
// response). Before, neither was counted, and a streamed answer replaced so was logged `ok` with no stage.
//
// Idempotency likewise: an answer whose idempotency record cannot be completed is withheld by the
// `idempotency` stage, and counted so.
//
// Real redis-server behind a relay that drops the connection after Redis answered the audit append (or
// the idempotency record's completion), so its outcome never reaches Gatehouse.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { startFakeUpstream, jsonResult, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedisRelay, type RedisRelay } from '../helpers/redis-relay.js';
import { waitFor } from '../helpers/otlp.js';

let up: FakeUpstream;
let redis: TestRedis;
let relay: RedisRelay;
let gw: TestGateway;
let other: FakeUpstream;
/** Two upstreams: the catalog hands a member's answer on as a stream (CallStream), whose answer the audit replaces. */
let catalog: TestGateway;

before(async () => {
  up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string; arguments?: { item?: string } } };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'tools/list') return jsonResult(res, body, { tools: ['note', 'note_sse'].map((name) => ({ name, inputSchema: { type: 'object' } })), resultType: 'complete', ttlMs: 0, cacheScope: 'public' });
    if (msg.method !== 'tools/call') return jsonResult(res, body, { resultType: 'complete' });
    const result = { content: [{ type: 'text', text: `noted ${msg.params?.arguments?.item ?? ''}` }], resultType: 'complete' };
    if (msg.params?.name === 'note') return jsonResult(res, body, result);
    // A notification first, the answer 300 ms later: relayed as it streams, the answer event held for the audit.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } })}\n\n`);
    setTimeout(() => res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result })}\n\n`), 300);
  }, { handshake: 'modern' });
  redis = await startRedis();
  relay = await startRedisRelay(redis.port);
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'redis', url: relay.url, keyPrefix: 'substitution:', commandTimeoutMs: 2_000 }, metrics: { enabled: true, port: 0 }, idempotency: { requireKeys: false, tools: ['up/note_sse'] } });
  other = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    jsonResult(res, body, msg.method === 'tools/list' ? { tools: [{ name: 'calm', inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 0, cacheScope: 'public' } : { resultType: 'complete' });
  }, { handshake: 'modern' });
  catalog = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ name: 'up', url: up.url, era: 'modern' }, { name: 'other', url: other.url, era: 'modern' }], store: { kind: 'redis', url: relay.url, keyPrefix: 'substitution-catalog:', commandTimeoutMs: 2_000 }, metrics: { enabled: true, port: 0 } });
});
after(async () => {
  await catalog?.close();
  await other?.close();
  await gw?.close();
  await relay?.close();
  await up?.close();
  await redis?.stop();
});

let n = 0;
/** Calls `tool` with an item only its audit record carries to Redis, with that append's answer lost. */
async function callWithAuditLost(tool: string, item: string, on: TestGateway = gw) {
  await warmUp(on);
  // Counted after the warm-up, whose refusals while the store was down (stage `state`) are not this call's.
  const before = await refusalsCounted(on);
  relay.dropAfter(item);
  const req = modernRequest(++n, 'tools/call', { name: await toolName(tool, on), arguments: { item } });
  return { res: await post(on.url, req.body, req.headers), before };
}

/**
 * The store is warm (scripts loaded, connection ready, up again after a dropped connection) before the
 * call under test; a store seen down refuses calls (503, stage `state`) until it answers again.
 */
async function warmUp(on: TestGateway): Promise<void> {
  let status = 0;
  for (let i = 0; i < 40 && status !== 200; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 250));
    const warm = modernRequest(++n, 'tools/call', { name: await toolName('note', on), arguments: { item: `warm-${n}` } });
    status = (await post(on.url, warm.body, warm.headers)).status;
  }
  assert.equal(status, 200, 'the store serves');
}

/** The name a gateway lists `tool` under (the catalog prefixes its members' tools). */
async function toolName(tool: string, on: TestGateway): Promise<string> {
  if (on === gw) return tool;
  let seen = '';
  for (let i = 0; i < 20; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 250));
    const list = modernRequest('list', 'tools/list');
    const res = await post(on.url, list.body, list.headers);
    seen = res.text;
    const tools = (res.json().result?.tools ?? []) as Array<{ name: string }>;
    const name = tools.map((t) => t.name).find((t) => t.endsWith(`_${tool}`) || t.endsWith(`/${tool}`));
    if (name !== undefined) return name;
  }
  assert.fail(`the catalog never listed ${tool}: ${seen}`);
}

async function refusalsCounted(on: TestGateway = gw): Promise<number> {
  const text = await (await request(on.gateway.metricsUrl!)).body.text();
  const m = /gatehouse_refusals_total\{reason="state_unavailable"\} (\d+)/.exec(text);
  return m === null ? 0 : Number(m[1]);
}

test('a JSON answer withheld because the audit could not write is counted as a refusal, stage audit', async () => {
  const { res, before } = await callWithAuditLost('note', 'auditlostjson1');
  assert.equal(res.status, 503, res.text);
  assert.equal(res.json().error.data.code, 'GW_ERR_STATE_UNAVAILABLE');
  const line = await waitFor('the request line', () => gw.logs.find((l) => l.msg === 'request' && l.tool === 'note' && l.status === 503 && l.stage !== 'state'));
  assert.equal(line.outcome, 'refused');
  assert.equal(line.refusal, 'state_unavailable');
  assert.equal(line.stage, 'audit');
  assert.equal(await refusalsCounted(), before + 1);
});

test('a streamed answer replaced because the audit could not write is logged and counted as a refusal, stage audit', async () => {
  const { res, before } = await callWithAuditLost('note_sse', 'auditlostsse1');
  assert.equal(res.status, 200, 'the stream had begun');
  assert.match(res.text, /GW_ERR_STATE_UNAVAILABLE/);
  const line = await waitFor('the request line', () => gw.logs.find((l) => l.msg === 'request' && l.tool === 'note_sse'));
  assert.equal(line.outcome, 'refused');
  assert.equal(line.refusal, 'state_unavailable');
  assert.equal(line.stage, 'audit');
  assert.equal(await refusalsCounted(), before + 1);
});

test('a catalog stream whose answer the audit replaced is logged and counted as a refusal, stage audit', async () => {
  const { res, before } = await callWithAuditLost('note', 'auditlostcatalog1', catalog);
  assert.equal(res.status, 503, res.text);
  assert.match(res.text, /GW_ERR_STATE_UNAVAILABLE/);
  const line = await waitFor('the request line', () => catalog.logs.find((l) => l.msg === 'request' && String(l.tool).endsWith('note') && l.status === 503 && l.stage !== 'state'));
  assert.equal(line.outcome, 'refused');
  assert.equal(line.refusal, 'state_unavailable');
  assert.equal(line.stage, 'audit');
  assert.equal(await refusalsCounted(catalog), before + 1);
});

test('a streamed answer withheld because its idempotency record was lost is logged and counted as a refusal, stage idempotency', async () => {
  // `note_sse` is a write (idempotency.tools), so a key makes its answer kept; its answer comes 300 ms
  // after the call started, and meanwhile the record is deleted (evicted, flushed): the completion finds
  // nothing to complete, and the answer, which the README promises is kept before it is returned, is withheld.
  await warmUp(gw);
  const raw = new Redis(redis.port, { lazyConnect: true });
  await raw.connect();
  try {
    const before = await refusalsCounted();
    const req = modernRequest(++n, 'tools/call', { name: 'note_sse', arguments: { item: 'idemlost1' }, _meta: { idempotencyKey: 'substitution-key-0001' } });
    const sent = post(gw.url, req.body, req.headers);
    let deleted = 0;
    for (let i = 0; i < 20 && deleted === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const keys = await raw.keys('substitution:i:*');
      if (keys.length > 0) deleted = await raw.del(...keys);
    }
    assert.ok(deleted > 0, `the record was found and deleted while the call ran: ${JSON.stringify(await raw.keys('*'))}`);
    const res = await sent;
    assert.equal(res.status, 200, 'the stream had begun');
    assert.match(res.text, /GW_ERR_STATE_UNAVAILABLE/);
    const line = await waitFor('the request line', () => gw.logs.find((l) => l.msg === 'request' && l.callId === res.headers['x-gatehouse-call-id']));
    assert.equal(line.outcome, 'refused', JSON.stringify(line));
    assert.equal(line.refusal, 'state_unavailable');
    assert.equal(line.stage, 'idempotency');
    assert.equal(await refusalsCounted(), before + 1);
  } finally {
    raw.disconnect();
  }
});

test('HTTP+SSE (2024-11-05): a catalog stream whose answer the audit replaced is logged and counted as a refusal, stage audit', async () => {
  const client = new Client({ name: 'sse-substitution', version: '1' }, { capabilities: {} });
  try {
    await client.connect(new SSEClientTransport(new URL('/sse', catalog.origin)), { timeout: 10_000 });
    await warmUp(catalog);
    const before = await refusalsCounted(catalog);
    const tool = await toolName('note', catalog);
    relay.dropAfter('auditlostsse2');
    const result = await client.callTool({ name: tool, arguments: { item: 'auditlostsse2' } }).catch((err: unknown) => err);
    assert.match(String((result as Error).message ?? JSON.stringify(result)), /could not record this call/);
    const line = await waitFor('the request line', () => catalog.logs.find((l) => l.msg === 'request' && l.era === 'legacy' && l.tool === tool && l.stage !== 'state' && l.status !== 202 && l.refusal !== undefined));
    assert.equal(line.outcome, 'refused', JSON.stringify(line));
    assert.equal(line.refusal, 'state_unavailable');
    assert.equal(line.stage, 'audit');
    assert.equal(await refusalsCounted(catalog), before + 1);
  } finally {
    await client.close().catch(() => {});
  }
});
