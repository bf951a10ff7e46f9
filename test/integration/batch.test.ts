// JSON-RPC batches from 2025-03-26 clients (GATEWAY-REQUIREMENTS §2, batching; 2025-03-26/basic/transports.mdx
// §Sending Messages 2–5; 2025-03-26/basic/index.mdx: implementations MUST support receiving batches).
// Gatehouse unbatches: each message is a call of its own (own call id, policy, audit record, log line) that
// reaches the upstream alone, and the answers come back on one SSE stream. Later revisions removed batches
// (2025-06-18 changelog), so a client that says it speaks one is refused as before. The upstream is the
// reference server-everything; the batching client is the v1 SDK's own Streamable HTTP transport, driven at
// the message level so that it speaks 2025-03-26 (no MCP-Protocol-Version header), plus raw HTTP for the
// malformed cases.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startEverythingHttp, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/stdio-children.js';

const KEY = 'gh_batch_0123456789abcdefghijklmnopqrstuv';
const AUTH = { authorization: `Bearer ${KEY}` };
/** What a 2025-03-26 client sends: no MCP-Protocol-Version header. */
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...AUTH };

let upstream: EverythingHttp;
let gw: TestGateway;
let storePath: string;
before(async () => {
  upstream = await startEverythingHttp();
  storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-batch-')), 'gatehouse.db');
  gw = await startGateway({
    upstreams: [{ name: 'everything', url: upstream.url }],
    auth: { anonymous: false, apiKeys: [{ id: 'batcher', hash: hashKey(KEY) }] },
    store: { kind: 'sqlite', path: storePath },
    // Two calls of get-sum a minute: the third call of one batch is limited on its own.
    policy: { rateLimits: [{ id: 'sums', per: 'key', tools: ['everything/get-sum'], rate: 2, perSeconds: 60, burst: 2 }] },
  });
});
after(async () => {
  await gw.close();
  await upstream.close();
});

const rpc = (id: number | string, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0' as const, id, method, params });

/** A 2025-03-26 session through Gatehouse, opened with raw HTTP: its id. */
async function openSession(): Promise<string> {
  const init = await request(gw.url, { method: 'POST', headers: HEADERS, body: JSON.stringify(rpc(0, 'initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'batch-test', version: '1' } })) });
  assert.equal(init.statusCode, 200);
  const sid = init.headers['mcp-session-id'];
  assert.equal(typeof sid, 'string');
  const text = await init.body.text();
  assert.match(text, /"protocolVersion":"2025-03-26"/);
  const ack = await request(gw.url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': sid as string }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  assert.equal(ack.statusCode, 202);
  await ack.body.dump();
  return sid as string;
}

/** POSTs `body` on the session; the status, content type and the messages of the answer (SSE events or JSON). */
async function postBatch(sid: string, body: string, extra: Record<string, string> = {}): Promise<{ status: number; type: string; messages: Array<Record<string, any>> }> {
  const res = await request(gw.url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': sid, ...extra }, body });
  const text = await res.body.text();
  const type = String(res.headers['content-type'] ?? '');
  const messages = type.startsWith('text/event-stream')
    ? text
        .split('\n\n')
        .flatMap((event) => event.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)))
        .filter((d) => d !== '')
        .map((d) => JSON.parse(d) as Record<string, any>)
    : text === ''
      ? []
      : [JSON.parse(text) as Record<string, any>];
  return { status: res.statusCode, type, messages };
}

const byId = (messages: Array<Record<string, any>>) => new Map(messages.filter((m) => 'id' in m).map((m) => [m.id, m]));

async function auditRecords() {
  const store = new SqliteStore(storePath);
  try {
    return await store.readAudit({ limit: 10_000 });
  } finally {
    await store.close();
  }
}

describe('2025-03-26 batches', () => {
  test('the v1 SDK transport sends a batch: every request is answered with its own response, on one SSE stream', async () => {
    const transport = new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: AUTH } });
    const received: JSONRPCMessage[] = [];
    transport.onmessage = (m) => received.push(m);
    // send() resolves once the POST is answered; messages on an SSE answer arrive after it (bounded wait).
    const answered = async (...ids: number[]): Promise<Map<unknown, Record<string, any>>> => {
      for (let i = 0; i < 100 && !ids.every((id) => byId(received as Array<Record<string, any>>).has(id)); i++) await new Promise((r) => setTimeout(r, 20));
      return byId(received as Array<Record<string, any>>);
    };
    await transport.start();
    try {
      await transport.send(rpc(1, 'initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'sdk-batch', version: '1' } }) as JSONRPCMessage);
      assert.equal((await answered(1)).get(1)?.result?.protocolVersion, '2025-03-26');
      assert.ok(transport.sessionId, 'the session id was taken from the answer');
      await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' } as JSONRPCMessage);
      // The transport sends whatever it is given as the body: here, an array.
      const batch = [rpc(2, 'tools/list'), rpc(3, 'tools/call', { name: 'echo', arguments: { message: 'one' } }), rpc(4, 'tools/call', { name: 'echo', arguments: { message: 'two' } })];
      await transport.send(batch as unknown as JSONRPCMessage);
      const answers = await answered(2, 3, 4);
      assert.ok(answers.get(2)?.result?.tools?.some((t: { name: string }) => t.name === 'echo'), JSON.stringify(received));
      assert.equal(answers.get(3)?.result?.content?.[0]?.text, 'Echo: one');
      assert.equal(answers.get(4)?.result?.content?.[0]?.text, 'Echo: two');
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await transport.close();
    }
  });

  test('each message is a governed call of its own: its own log line and call id, its own audit record, its own limit', async () => {
    const sid = await openSession();
    const logged = gw.logs.length;
    const before = (await auditRecords()).length;
    const sums = [11, 12, 13].map((id) => rpc(id, 'tools/call', { name: 'get-sum', arguments: { a: id, b: 1 } }));
    const answer = await postBatch(sid, JSON.stringify(sums));
    assert.equal(answer.status, 200);
    assert.match(answer.type, /^text\/event-stream/);
    const answers = byId(answer.messages);
    assert.equal(answers.size, 3, JSON.stringify(answer.messages));
    const limited = [...answers.values()].filter((m) => m.result?.structuredContent?.error?.code === 'rate_limited');
    assert.equal(limited.length, 1, 'the third call of the batch met the limit of two');
    const summed = [...answers.values()].filter((m) => m.result?.isError !== true);
    assert.equal(summed.length, 2);
    for (const m of summed) assert.match(m.result.content[0].text, /The sum of \d+ and 1 is \d+/);

    // The log goes out in batches of a few milliseconds: waited for (bounded), not slept on.
    const requestLines = () => gw.logs.slice(logged).filter((l) => l.msg === 'request');
    await waitUntil(() => requestLines().length >= 3, 5_000);
    const lines = requestLines();
    assert.equal(lines.length, 3, 'one request line per message, none for the HTTP request that carried them');
    assert.equal(new Set(lines.map((l) => l.callId)).size, 3);
    assert.ok(lines.every((l) => l.method === 'tools/call' && l.era === 'legacy' && l.subject === 'key:batcher'));
    const records = (await auditRecords()).slice(before);
    assert.equal(records.length, 3);
    assert.deepEqual(new Set(records.map((r) => r.callId)), new Set(lines.map((l) => l.callId)));
    assert.deepEqual(records.map((r) => r.outcome).sort(), ['ok', 'ok', 'refused']);
  });

  test('a batch of notifications and responses only is answered 202 with no body', async () => {
    const sid = await openSession();
    const answer = await postBatch(sid, JSON.stringify([{ jsonrpc: '2.0', method: 'notifications/roots/list_changed' }, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } }]));
    assert.equal(answer.status, 202);
    assert.deepEqual(answer.messages, []);
  });

  test('an element that is no message, and an initialize, get errors of their own; the rest of the batch runs', async () => {
    const sid = await openSession();
    const answer = await postBatch(sid, JSON.stringify([rpc(21, 'tools/call', { name: 'echo', arguments: { message: 'kept' } }), 42, [rpc(22, 'ping')], rpc(23, 'initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'x', version: '1' } })]));
    assert.equal(answer.status, 200);
    const answers = byId(answer.messages);
    assert.equal(answers.get(21)?.result?.content?.[0]?.text, 'Echo: kept');
    assert.equal(answers.get(23)?.error?.code, -32600);
    assert.match(answers.get(23)?.error?.message, /initialize must not be part of a batch/);
    const nulls = answer.messages.filter((m) => m.id === null);
    assert.equal(nulls.length, 2, JSON.stringify(answer.messages));
    assert.ok(nulls.every((m) => m.error?.code === -32600));
  });

  test('a credential inside one message refuses that message only', async () => {
    const sid = await openSession();
    const answer = await postBatch(sid, JSON.stringify([rpc(31, 'tools/call', { name: 'echo', arguments: { message: 'fine' } }), rpc(32, 'tools/call', { name: 'echo', arguments: { message: 'x' }, _meta: { authorization: `Bearer ${KEY}` } })]));
    const answers = byId(answer.messages);
    assert.equal(answers.get(31)?.result?.content?.[0]?.text, 'Echo: fine');
    assert.match(answers.get(32)?.error?.message ?? '', /Credentials are not accepted in the request body/);
  });
});

describe('batches outside 2025-03-26', () => {
  test('a client that says it speaks a later revision is refused with 400 -32600, and nothing reaches the upstream', async () => {
    const sid = await openSession();
    const logged = gw.logs.length;
    const answer = await postBatch(sid, JSON.stringify([rpc(41, 'tools/call', { name: 'echo', arguments: { message: 'never' } })]), { 'mcp-protocol-version': '2025-11-25' });
    assert.equal(answer.status, 400);
    assert.equal(answer.messages[0]?.error?.code, -32600);
    assert.match(answer.messages[0]?.error?.message, /batches are not supported after 2025-03-26/);
    const refusedLogged = () => gw.logs.slice(logged).some((l) => l.msg === 'request refused' && l.reason === 'batch');
    assert.ok(await waitUntil(refusedLogged, 5_000), 'the refusal was logged');
  });

  test('an empty batch, and one over 64 messages, are refused as a whole', async () => {
    const sid = await openSession();
    const empty = await postBatch(sid, '[]');
    assert.equal(empty.status, 400);
    assert.match(empty.messages[0]?.error?.message, /an empty batch/);
    const big = await postBatch(sid, JSON.stringify(Array.from({ length: 65 }, (_, i) => rpc(100 + i, 'ping'))));
    assert.equal(big.status, 400);
    assert.match(big.messages[0]?.error?.message, /at most 64 messages; this one has 65/);
  });
});

describe('batches and the per-address limit', () => {
  /** A gateway whose one limit is per address: a burst of four, one token every 900 s, so nothing refills while a test runs. */
  async function withPerAddressLimit(run: (limited: TestGateway) => Promise<void>): Promise<void> {
    const limited = await startGateway({
      upstreams: [{ name: 'everything', url: upstream.url }],
      auth: { anonymous: false, apiKeys: [{ id: 'batcher', hash: hashKey(KEY) }] },
      policy: { rateLimits: [{ id: 'per-address', per: 'ip', rate: 4, perSeconds: 3600, burst: 4 }] },
    });
    try {
      await run(limited);
    } finally {
      await limited.close();
    }
  }
  /** A batch of `n` pings, ids from `from` on. */
  const pings = (n: number, from: number) => JSON.stringify(Array.from({ length: n }, (_, i) => rpc(from + i, 'ping')));

  test('each message of a batch takes a token of policy.rateLimits per: ip, not the HTTP request alone', async () => {
    await withPerAddressLimit(async (limited) => {
      // Three messages: three tokens of four.
      const fits = await request(limited.url, { method: 'POST', headers: HEADERS, body: pings(3, 1) });
      assert.equal(fits.statusCode, 200);
      await fits.body.dump();
      // Three more: one token left, so the batch is refused as a whole.
      const over = await request(limited.url, { method: 'POST', headers: HEADERS, body: pings(3, 10) });
      assert.equal(over.statusCode, 429, await over.body.text());
    });
  });

  // A refused batch took its tokens one by one until one was missing, and its Retry-After was the wait for
  // one token: the bucket was drained by every refusal, so a client that retried the batch when told to was
  // refused again, for good. Now the batch's further messages take their tokens at once or not at all, and
  // Retry-After is the wait for the whole batch (the retry's door token too).
  test('a batch refused by the per-address limit takes no tokens past the door, and Retry-After is when the batch fits', async () => {
    await withPerAddressLimit(async (limited) => {
      const fits = await request(limited.url, { method: 'POST', headers: HEADERS, body: pings(2, 1) });
      assert.equal(fits.statusCode, 200);
      await fits.body.dump();
      // Two tokens left; three messages: the door takes one, the other two do not fit.
      const over = await request(limited.url, { method: 'POST', headers: HEADERS, body: pings(3, 10) });
      assert.equal(over.statusCode, 429, await over.body.text());
      const retryAfter = Number(over.headers['retry-after']);
      assert.ok(retryAfter > 1_790 && retryAfter <= 1_800, `one token left, three needed: two more, 900 s each; Retry-After ${retryAfter}`);
      // The token the refused batch left lets the next request through the door; a batch of five can never
      // fit a burst of four, and is told so (taking nothing past the door).
      const tooBig = await request(limited.url, { method: 'POST', headers: HEADERS, body: pings(5, 30) });
      assert.equal(tooBig.statusCode, 429);
      const message = ((await tooBig.body.json()) as { error: { message: string } }).error.message;
      assert.match(message, /a batch of 5 messages takes 5 tokens, more than its burst of 4/, `past the door, refused as too large for the bucket: ${message}`);
    });
  });
});

describe('a batch over its lifetime', () => {
  test('sixty-four calls at once follow the client\'s one signal without a MaxListenersExceededWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const sid = await openSession();
      const batch = Array.from({ length: 64 }, (_, i) => rpc(100 + i, 'tools/call', { name: 'echo', arguments: { message: `m${i}` } }));
      const { messages } = await postBatch(sid, JSON.stringify(batch));
      assert.equal(byId(messages).size, 64);
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(warnings.filter((w) => w === 'MaxListenersExceededWarning'), []);
    } finally {
      process.off('warning', onWarning);
    }
  });

  test('a call that runs longer than the keep-alive interval gets comments on the batch stream meanwhile', async () => {
    const sid = await openSession();
    const res = await request(gw.url, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': sid },
      body: JSON.stringify([rpc(1, 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 16, steps: 1 } }), rpc(2, 'ping')]),
    });
    const text = await res.body.text();
    const keepAlive = text.indexOf(': keep-alive');
    assert.ok(keepAlive >= 0, `a keep-alive comment (every 15 s) on a stream a proxy would otherwise time out: ${text}`);
    // Written while the long call ran: after the ping's answer (sent at once), before the long call's.
    assert.ok(text.indexOf('"id":2') >= 0 && text.indexOf('"id":2') < keepAlive, `after the ping's answer, not at the stream's start: ${text}`);
    assert.ok(keepAlive < text.indexOf('"id":1'), 'before the long call\'s answer');
    assert.match(text, /Long running operation completed/);
  });

  test("a 404 for the session on one message ends Gatehouse's binding of it, as for a request sent alone", async () => {
    // 2025-03-26/basic/transports.mdx §Session Management 3–4: the server answers 404 for a session it ended.
    const up = await startFakeUpstream((req, res, body) => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const msg = JSON.parse(body) as { id?: unknown; method?: string };
      if (msg.method === 'initialize') {
        return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'up-1' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-03-26', capabilities: { tools: {} }, serverInfo: { name: 'forgets', version: '1' } } }));
      }
      if (msg.method === 'notifications/initialized') return void res.writeHead(202).end();
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id ?? null, error: { code: -32001, message: 'Session not found' } }));
    });
    const forgetting = await startGateway({ upstreams: [{ name: 'forgets', url: up.url, era: 'legacy' }], auth: { anonymous: false, apiKeys: [{ id: 'batcher', hash: hashKey(KEY) }] } });
    try {
      const init = await request(forgetting.url, { method: 'POST', headers: HEADERS, body: JSON.stringify(rpc(0, 'initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'b', version: '1' } })) });
      const sid = init.headers['mcp-session-id'] as string;
      await init.body.dump();
      const batch = await request(forgetting.url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': sid }, body: JSON.stringify([rpc(1, 'tools/list'), rpc(2, 'ping')]) });
      assert.match(await batch.body.text(), /Session not found/);
      const reached = up.requests.length;
      const after = await request(forgetting.url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': sid }, body: JSON.stringify(rpc(3, 'tools/list')) });
      assert.equal(after.statusCode, 404);
      const answer = (await after.body.json()) as { error: { data?: { details?: { reason?: string } } } };
      assert.equal(answer.error.data?.details?.reason, 'unknown', 'refused by Gatehouse: the binding ended with the batch');
      assert.equal(up.requests.length, reached, 'nothing more reached the upstream');
    } finally {
      await forgetting.close();
      await up.close();
    }
  });

  test('messages after the point where the client left are not started', async () => {
    let calls = 0;
    const up = await startFakeUpstream(async (req, res, body) => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const msg = JSON.parse(body) as { id?: unknown; method?: string };
      if (msg.method === 'initialize') {
        return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'up-1' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-03-26', capabilities: { tools: {} }, serverInfo: { name: 'slow-notes', version: '1' } } }));
      }
      // A notification the upstream takes its time to accept: the batch waits for it before going on.
      if (msg.method === 'notifications/roots/list_changed') await new Promise((r) => setTimeout(r, 800));
      if (msg.method === 'tools/call') calls++;
      if (msg.id === undefined) return void res.writeHead(202).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [] } }));
    });
    const slow = await startGateway({ upstreams: [{ name: 'slow', url: up.url, era: 'legacy' }], auth: { anonymous: false, apiKeys: [{ id: 'batcher', hash: hashKey(KEY) }] } });
    try {
      const init = await request(slow.url, { method: 'POST', headers: HEADERS, body: JSON.stringify(rpc(0, 'initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'b', version: '1' } })) });
      const sid = init.headers['mcp-session-id'] as string;
      await init.body.dump();
      const body = JSON.stringify([rpc(1, 'ping'), { jsonrpc: '2.0', method: 'notifications/roots/list_changed' }, rpc(2, 'tools/call', { name: 'write', arguments: {} })]);
      await assert.rejects(request(slow.url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': sid }, body, signal: AbortSignal.timeout(300) }).then((r) => r.body.text()));
      await new Promise((r) => setTimeout(r, 1_200));
      assert.equal(calls, 0, 'the tools/call after the notification never reached the upstream');
      const logged = slow.logs.filter((l) => l.method === 'tools/call');
      assert.deepEqual(logged, [], 'nor was it started as a call (no log line, no audit record of a call that never ran)');
    } finally {
      await slow.close();
      await up.close();
    }
  });
});
