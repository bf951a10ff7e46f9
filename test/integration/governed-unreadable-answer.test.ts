// A governed call is recorded whatever its upstream answers. An answer to a request must be one JSON object,
// or an SSE stream (2026-07-28/basic/transports/streamable-http.mdx §Sending Messages, item 6;
// 2025-11-25/basic/transports.mdx §Sending Messages to the Server, item 5), and it must be the response to
// that request. A relayed JSON body that is not (cut short, not JSON, another request's id, a 202 with no
// body) used to go to the client as it came, unaudited and unseen by the breaker: the call is now a failure
// of the upstream (GW_ERR_UPSTREAM_BAD_RESPONSE), recorded before the client hears of it. A 2xx body is
// replaced by that failure, with the request's id; another status goes on as it came (a 404 must still
// reach a legacy client as a 404).
//
// Whichever way an upstream's failure reaches the audit (in the answer's stream, or as the refusal a stage
// that read the answer made of it), its record says `failed` with stage `upstream` (README §Audit).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import type { AuditRecord } from '../../src/store/store.js';
import { startFakeUpstream, type FakeHandler, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';

/** What the upstream answers each tool's call with. */
const ANSWERS: Record<string, (id: unknown) => { status: number; headers: Record<string, string>; body: string }> = {
  cut_short: (id) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[` }),
  not_json: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '<html>upstream proxy says hello</html>' }),
  other_id: (id) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: `not-${String(id)}`, result: { content: [], resultType: 'complete' } }) }),
  accepted: () => ({ status: 202, headers: {}, body: '' }),
  not_found: () => ({ status: 404, headers: { 'content-type': 'text/plain' }, body: 'no such session' }),
  // A member named twice: JSON.parse (and so the audit) keeps the last, many clients' parsers the first.
  dup_is_error: (id) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"failed"}],"isError":true,"isError":false}}` }),
  dup_result: (id) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"first"}],"isError":true},"result":{"content":[{"type":"text","text":"second"}]}}` }),
  dup_deep: (id) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[],"structuredContent":{"rows":[{"approved":false,"approved":true}]}}}` }),
  dup_sse: (id) => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: `event: message\ndata: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[],"isError":true,"isError":false}}\n\n` }),
  // Both result and error, or neither: no JSON-RPC response (JSON-RPC 2.0 §5: exactly one). The audit read
  // `error` first and a client may read `result` first (or find nothing and take the call for done).
  both: (id) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"done"}],"isError":false},"error":{"code":-32603,"message":"failed"}}` }),
  error_null: (id) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"done"}]},"error":null}` }),
  neither: (id) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: `{"jsonrpc":"2.0","id":${JSON.stringify(id)}}` }),
  both_sse: (id) => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: `event: message\ndata: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[]},"error":{"code":-32603,"message":"failed"}}\n\n` }),
  neither_sse: (id) => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: `event: message\ndata: {"jsonrpc":"2.0","id":${JSON.stringify(id)}}\n\n` }),
  fine: (id) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'ok' }], resultType: 'complete' } }) }),
};

/** A 2025-11-25 server (the fake's legacy handshake) with the same answers, for the legacy pass-through. */
let legacyUp: FakeUpstream;
let legacyGw: TestGateway;
let legacyStorePath: string;
let up: FakeUpstream;
let gw: TestGateway;
let storePath: string;
/** The same upstream behind a circuit breaker that opens at one failure of a tool. */
let gwBreaker: TestGateway;
let breakerStorePath: string;

before(async () => {
  const handler: FakeHandler = (req, res, body) => {
    // The legacy session's GET stream and its DELETE at the end.
    if (req.method !== 'POST') return void res.writeHead(req.method === 'DELETE' ? 200 : 405).end();
    const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string } };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'initialize') {
      const result = { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'liar', version: '1' } };
      return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'liar-session' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    }
    if (msg.method === 'tools/list') {
      const tools = [...Object.keys(ANSWERS), 'broken', 'dup_sse_later', 'both_sse_later'].map((name) => ({ name, inputSchema: { type: 'object' } }));
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools, resultType: 'complete', ttlMs: 0, cacheScope: 'public' } }));
    }
    if (msg.params?.name === 'both_sse_later') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}\n\n`);
      return void setTimeout(() => res.end(`event: message\ndata: {"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"content":[],"isError":false},"error":{"code":-32603,"message":"failed"}}\n\n`), 200);
    }
    if (msg.params?.name === 'dup_sse_later') {
      // A progress event, then (once the relay streams) the answer naming isError twice.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}\n\n`);
      return void setTimeout(() => res.end(`event: message\ndata: {"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"content":[],"isError":true,"isError":false}}\n\n`), 200);
    }
    if (msg.params?.name === 'broken') {
      // Headers, half a body, and the connection dropped.
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write(`{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},`);
      return void setTimeout(() => res.destroy(), 20);
    }
    const answer = ANSWERS[msg.params?.name ?? '']?.(msg.id);
    if (answer === undefined) return void res.writeHead(500).end();
    res.writeHead(answer.status, answer.headers).end(answer.body);
  };
  up = await startFakeUpstream(handler, { handshake: 'modern' });
  legacyUp = await startFakeUpstream(handler);
  legacyStorePath = freshStorePath('legacy');
  legacyGw = await startGateway({ upstreams: [{ name: 'up', url: legacyUp.url, era: 'legacy' }], store: { kind: 'sqlite', path: legacyStorePath } });
  storePath = freshStorePath('modern');
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'sqlite', path: storePath } });
  breakerStorePath = freshStorePath('breaker');
  gwBreaker = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    store: { kind: 'sqlite', path: breakerStorePath },
    policy: { breakers: [{ id: 'answers', per: 'tool', consecutiveFailures: 1, coolDownSeconds: 600 }] },
  });
});
after(async () => {
  await gw?.close();
  await gwBreaker?.close();
  await legacyGw?.close();
  await up?.close();
  await legacyUp?.close();
});

/** A store file of its own for one gateway. */
function freshStorePath(label: string): string {
  return join(mkdtempSync(join(tmpdir(), `gatehouse-unreadable-${label}-`)), 'gatehouse.db');
}

async function call(name: string, id: number, through: TestGateway = gw) {
  const m = modernRequest(id, 'tools/call', { name, arguments: {} });
  return post(through.url, m.body, m.headers);
}

async function recordOf(tool: string, path = storePath): Promise<AuditRecord[]> {
  const store = new SqliteStore(path);
  try {
    return (await store.readAudit({ limit: 1_000 })).filter((r) => r.tool === tool);
  } finally {
    await store.close();
  }
}

for (const [name, id] of [['cut_short', 11], ['not_json', 12], ['other_id', 13], ['accepted', 14]] as const) {
  test(`a 2xx answer that is not the response (${name}) → GW_ERR_UPSTREAM_BAD_RESPONSE for the request's id, audited as failed`, async () => {
    const res = await call(name, id);
    assert.equal(res.status, 502, res.text);
    const body = res.json();
    assert.equal(body.id, id);
    assert.equal(body.error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
    assert.equal(body.error.data.upstream, 'up');

    const records = await recordOf(name);
    assert.equal(records.length, 1, 'the call has its record');
    assert.equal(records[0]!.outcome, 'failed');
    assert.equal(records[0]!.refusal, 'upstream_bad_response');
    assert.equal(records[0]!.stage, 'upstream');
    assert.equal(records[0]!.callId, body.error.data.callId);
  });
}

/** The JSON-RPC messages of an SSE answer's data lines. */
function streamMessages(text: string) {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => JSON.parse(line.slice(5)) as { id?: number; method?: string; result?: unknown; error?: { data?: { code?: string } } });
}

/** The call's one audit record says the upstream failed it with a bad response. */
async function assertAuditedBadResponse(tool: string): Promise<void> {
  assert.deepEqual((await recordOf(tool)).map((r) => [r.outcome, r.refusal, r.stage]), [['failed', 'upstream_bad_response', 'upstream']]);
}

// The audit read the last of a member named twice (isError false: `ok`), while a client reading the first
// saw a tool error: the record and the answer disagreed. Such an answer is the upstream's failure now.
for (const [name, id] of [['dup_is_error', 71], ['dup_result', 72], ['dup_deep', 73], ['dup_sse', 74]] as const) {
  test(`an answer naming a member twice (${name}) → GW_ERR_UPSTREAM_BAD_RESPONSE for the request's id, audited as failed`, async () => {
    const res = await call(name, id);
    assert.equal(res.status, 502, res.text);
    const body = res.json();
    assert.equal(body.id, id);
    assert.equal(body.error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
    assert.match(body.error.message, /names a member twice/);
    await assertAuditedBadResponse(name);
  });
}

test('an answer naming a member twice after the stream has begun is held back: the stream ends with the failure as its answer', async () => {
  const res = await call('dup_sse_later', 75);
  assert.equal(res.status, 200);
  const messages = streamMessages(res.text);
  assert.equal(messages[0]?.method, 'notifications/message', 'what came before the answer went on');
  const answer = messages.find((m) => m.id === 75);
  assert.equal(answer?.result, undefined, res.text);
  assert.equal(answer?.error?.data?.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE', res.text);
  assert.doesNotMatch(res.text, /"isError":true/);
  await assertAuditedBadResponse('dup_sse_later');
});

// An answer with both `result` and `error`, or neither, is no JSON-RPC response (JSON-RPC 2.0 §5): the audit
// said `error` of one a client reading `result` took for done, and `ok` of one with neither.
for (const [name, id] of [['both', 81], ['error_null', 82], ['neither', 83], ['both_sse', 84], ['neither_sse', 85]] as const) {
  test(`an answer with both result and error, or neither (${name}) → GW_ERR_UPSTREAM_BAD_RESPONSE for the request's id, audited as failed`, async () => {
    const res = await call(name, id);
    assert.equal(res.status, 502, res.text);
    const body = res.json();
    assert.equal(body.id, id);
    assert.equal(body.result, undefined);
    assert.equal(body.error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
    assert.match(body.error.message, /exactly one of result and error/);
    await assertAuditedBadResponse(name);
  });
}

test('an answer with both result and error after the stream has begun is held back: the stream ends with the failure as its answer', async () => {
  const res = await call('both_sse_later', 86);
  assert.equal(res.status, 200);
  const messages = streamMessages(res.text);
  assert.equal(messages[0]?.method, 'notifications/message', 'what came before the answer went on');
  const answers = messages.filter((m) => m.id === 86);
  assert.equal(answers.length, 1, res.text);
  assert.equal(answers[0]?.result, undefined, res.text);
  assert.equal(answers[0]?.error?.data?.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE', res.text);
  await assertAuditedBadResponse('both_sse_later');
});

test('the same in the legacy pass-through (a 2025-11-25 client and server, one session)', async () => {
  const session = await legacySession(legacyGw.url);
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  const res = await post(legacyGw.url, rpc(51, 'tools/call', { name: 'cut_short', arguments: {} }), headers);
  assert.equal(res.status, 502, res.text);
  assert.equal(res.json().id, 51);
  assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
  const records = await recordOf('cut_short', legacyStorePath);
  assert.deepEqual(records.map((r) => [r.outcome, r.refusal]), [['failed', 'upstream_bad_response']]);
});

test('the circuit breaker counts such an answer as the upstream failing: one in a row opens the circuit of that tool', async () => {
  const first = await call('not_json', 41, gwBreaker);
  assert.equal(first.json().error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
  const second = await call('not_json', 42, gwBreaker);
  const refused = second.json();
  assert.equal(refused.result?.isError, true, second.text);
  assert.match(JSON.stringify(refused.result.content), /circuit/i);
  const sentUpstream = up.requests.filter((r) => r.body.includes('"not_json"')).length;
  // Audited as the upstream failing, whichever stage read the answer first, then as refused by the circuit.
  assert.deepEqual((await recordOf('not_json', breakerStorePath)).map((r) => [r.outcome, r.refusal, r.stage]), [
    ['failed', 'upstream_bad_response', 'upstream'],
    ['refused', 'upstream_unavailable', 'breaker'],
  ]);
  // The circuit held the second call back: the upstream saw the not_json calls of the other gateway and the first of this one only.
  assert.equal(sentUpstream, 2);
});

test('an answer that breaks off mid-body is audited as the upstream failing (README §Audit: `failed`), not as refused', async () => {
  const res = await call('broken', 61);
  assert.equal(res.status, 502, res.text);
  assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_UNREACHABLE');
  assert.deepEqual((await recordOf('broken')).map((r) => [r.outcome, r.refusal, r.stage]), [['failed', 'upstream_unreachable', 'upstream']]);
});

test('a non-2xx answer that is not JSON-RPC goes on as it came (404 stays 404), and is audited as failed first', async () => {
  const res = await call('not_found', 21);
  assert.equal(res.status, 404);
  assert.equal(res.text, 'no such session');
  const records = await recordOf('not_found');
  assert.equal(records.length, 1);
  assert.equal(records[0]!.outcome, 'failed');
  assert.equal(records[0]!.refusal, 'upstream_bad_response');
});

test('a well-formed answer is relayed and audited as ok, with its run id (the rule above does not touch it)', async () => {
  const res = await call('fine', 31);
  assert.equal(res.status, 200);
  const body = res.json();
  assert.equal(body.id, 31);
  assert.deepEqual(body.result.content, [{ type: 'text', text: 'ok' }]);
  const records = await recordOf('fine');
  assert.equal(records.length, 1);
  assert.equal(records[0]!.outcome, 'ok');
  assert.equal(records[0]!.runId, body.result._meta['dev.gatehouse/run_id']);
});
