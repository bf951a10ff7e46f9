// Pass-through behaviour that needs a misbehaving upstream: unreachable, stalled, broken streams,
// credentials that must not leak, SSE relayed event by event with backpressure, and client aborts.
// Spec: 2025-11-25/basic/transports.mdx §Sending Messages; 2026-07-28/basic/transports/streamable-http.mdx
// §Receiving Messages; 2026-07-28 security best practices §Token Passthrough.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startFakeUpstream, jsonResult, sleep, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, post, rpc } from '../helpers/http.js';

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function gatewayFor(upstream: string | FakeUpstream, extra: Record<string, unknown> = {}): Promise<TestGateway> {
  const url = typeof upstream === 'string' ? upstream : upstream.url;
  const gw = await startGateway({ upstreams: [{ name: 'up', url, ...extra }] });
  cleanups.push(() => gw.close());
  return gw;
}

async function fake(handler: Parameters<typeof startFakeUpstream>[0]): Promise<FakeUpstream> {
  const f = await startFakeUpstream(handler);
  cleanups.push(() => f.close());
  return f;
}

describe('upstream failures become clear JSON-RPC errors', () => {
  test('unreachable upstream → 502 with the request id and GW_ERR_UPSTREAM_UNREACHABLE', async () => {
    const gw = await gatewayFor('http://127.0.0.1:1/mcp');
    const res = await post(gw.url, rpc(7, 'tools/list'));
    assert.equal(res.status, 502);
    const body = res.json();
    assert.equal(body.id, 7);
    assert.equal(body.error.code, -32603);
    assert.equal(body.error.data.code, 'GW_ERR_UPSTREAM_UNREACHABLE');
    assert.equal(body.error.data.upstream, 'up');
    assert.equal(body.error.data.callId, res.headers['x-gatehouse-call-id']);
  });

  test('upstream that never sends headers → 504 GW_ERR_UPSTREAM_TIMEOUT', async () => {
    const stall = await fake(() => {
      /* never answers */
    });
    const gw = await gatewayFor(stall, { timeouts: { headersMs: 300 } });
    const res = await post(gw.url, rpc('a', 'tools/list'));
    assert.equal(res.status, 504);
    assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_TIMEOUT');
    assert.equal(res.json().id, 'a');
  });

  test('an upstream that fails with HTTP 5xx → a gateway failure with a code, its own words kept (found by the edge fuzzer)', async () => {
    const up = await fake((_req, res, body) => {
      if (body === '') return void res.writeHead(200).end();
      const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string } };
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'failing', version: '1' } }, { 'mcp-session-id': 'failing-session' });
      const name = msg.params?.name;
      if (name === 'plain') return void res.writeHead(500, { 'content-type': 'text/plain' }).end('upstream exploded');
      if (name === 'rpc') return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"database is down"}}');
      if (name === 'busy') return void res.writeHead(503, { 'content-type': 'text/html', 'retry-after': '30' }).end('<h1>busy</h1>');
      res.writeHead(504).end();
    });
    const gw = await gatewayFor(up);
    const session = await legacySession(gw.url);
    const call = (name: string) => post(gw.url, rpc(1, 'tools/call', { name }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    const plain = await call('plain');
    assert.equal(plain.status, 502);
    assert.equal(plain.json().error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
    assert.equal(plain.json().id, 1);
    assert.match(plain.json().error.message, /failed with HTTP 500: upstream exploded/);
    const rpcError = await call('rpc');
    assert.equal(rpcError.status, 502);
    assert.match(rpcError.json().error.message, /HTTP 500: database is down/);
    const busy = await call('busy');
    assert.equal(busy.status, 503);
    assert.equal(busy.json().error.data.code, 'GW_ERR_UPSTREAM_OVERLOADED');
    assert.equal(busy.headers['retry-after'], '1');
    assert.doesNotMatch(busy.text, /<h1>/, 'an HTML page is not passed on');
    const slow = await call('timeout');
    assert.equal(slow.status, 504);
    assert.equal(slow.json().error.data.code, 'GW_ERR_UPSTREAM_TIMEOUT');
  });

  test('upstream refusing the gateway credentials → 502, its challenge not passed on', async () => {
    const up = await fake((_req, res) => {
      res.writeHead(401, { 'www-authenticate': 'Bearer realm="upstream"' }).end();
    });
    const gw = await gatewayFor(up);
    const res = await post(gw.url, rpc(1, 'tools/list'));
    assert.equal(res.status, 502);
    assert.equal(res.headers['www-authenticate'], undefined);
    assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
  });

  test('SSE stream that breaks before the response → an error event for that request id', async () => {
    const up = await fake((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n');
      setTimeout(() => res.destroy(), 50);
    });
    const gw = await gatewayFor(up);
    const res = await post(gw.url, rpc(42, 'tools/call', { name: 'x' }));
    assert.equal(res.status, 200);
    const events = res.text.split('\n\n').filter((e) => e.includes('data:'));
    assert.equal(events.length, 2, res.text);
    const last = JSON.parse(events[1]!.split('data: ')[1]!) as { id: number; error: { data: { code: string } } };
    assert.equal(last.id, 42);
    assert.match(last.error.data.code, /^GW_ERR_UPSTREAM_/);
  });

  test('a governed call whose SSE stream breaks, or ends, before its answer is audited as failed before the error leaves', async () => {
    let calls = 0;
    const up = await fake((_req, res, body) => {
      if (!body.includes('"tools/call"')) return jsonResult(res, body, {});
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n');
      // The first call's stream breaks; the second one's ends cleanly, without an answer.
      if (++calls === 1) setTimeout(() => res.destroy(), 50);
      else res.end();
    });
    const storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-relay-audit-')), 'gatehouse.db');
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], store: { kind: 'sqlite', path: storePath } });
    cleanups.push(() => gw.close());
    for (const id of [51, 52]) {
      const res = await post(gw.url, rpc(id, 'tools/call', { name: 'x' }));
      const last = JSON.parse(res.text.split('data: ').at(-1)!) as { id: number; error?: { data: { code: string } } };
      assert.equal(last.id, id);
      assert.match(last.error?.data.code ?? '', /^GW_ERR_UPSTREAM_/, res.text);
    }
    const store = new SqliteStore(storePath);
    try {
      const records = await store.readAudit({ limit: 10 });
      assert.deepEqual(records.map((r) => [r.outcome, r.refusal]), [['failed', 'upstream_unreachable'], ['failed', 'upstream_bad_response']], JSON.stringify(records));
    } finally {
      await store.close();
    }
  });

  test('an SSE stream that goes silent past timeouts.bodyMs → an error event with GW_ERR_UPSTREAM_TIMEOUT', async () => {
    const up = await fake((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': started\n\n'); // then silence, never ending
    });
    const gw = await gatewayFor(up, { timeouts: { bodyMs: 300 } });
    const res = await post(gw.url, rpc(3, 'tools/call', { name: 'x' }));
    const last = JSON.parse(res.text.split('data: ').at(-1)!) as { id: number; error: { data: { code: string } } };
    assert.equal(last.id, 3);
    assert.equal(last.error.data.code, 'GW_ERR_UPSTREAM_TIMEOUT');
  });

  test('a stream with event ids that closes cleanly is resumed by Gatehouse: the answer comes on the same client stream', async () => {
    // 2025-11-25/basic/transports.mdx §Sending Messages 6: the server MAY close the connection after a
    // priming event; a GET with Last-Event-ID after its retry gets the rest (era unpinned: auto).
    const up = await fake((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (req.method === 'GET' && req.headers['last-event-id'] === '1') return void res.end('id: 2\nevent: message\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n\n');
      res.end('id: 1\nretry: 100\ndata: \n\n');
    });
    const gw = await gatewayFor(up);
    const res = await post(gw.url, rpc(1, 'tools/call', { name: 'x' }));
    assert.ok(res.text.startsWith('id: 1\nretry: 100\ndata: \n\n'), res.text);
    const answer = JSON.parse(res.text.split('data: ').at(-1)!) as { id: number; result?: { content: unknown[] } };
    assert.equal(answer.id, 1);
    assert.deepEqual(answer.result?.content, []);
  });

  test('a server that only repeats its priming event on every resume is given up after timeouts.bodyMs: an error event, no endless polling', async () => {
    let gets = 0;
    const up = await fake((req, res, body) => {
      if (req.method === 'POST' && !body.includes('"tools/call"')) return jsonResult(res, body, body.includes('"initialize"') ? { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'f', version: '1' } } : {});
      if (req.method === 'GET') gets++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('id: 1\nretry: 20\ndata: \n\n');
    });
    const gw = await gatewayFor(up, { timeouts: { bodyMs: 1_000 } });
    const res = await post(gw.url, rpc(2, 'tools/call', { name: 'x' }));
    const last = JSON.parse(res.text.split('data: ').at(-1)!) as { id: number; error: { data: { code: string } } };
    assert.equal(last.id, 2);
    assert.equal(last.error.data.code, 'GW_ERR_UPSTREAM_TIMEOUT');
    assert.ok(gets >= 2 && gets <= 8, `resumed with a doubling wait, not in a tight loop: ${gets} GETs`);
  });
});

describe('what reaches the upstream', () => {
  test("client Authorization and Cookie never reach the upstream; configured headers and the legacy era's MCP headers do", async () => {
    const up = await fake((req, res, body) => {
      // Gatehouse ends the session its era probe opened when the initialize answer is no InitializeResult (this
      // fake's is not): a DELETE, with no body to answer.
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      jsonResult(res, body, { tools: [] }, body.includes('"initialize"') ? { 'mcp-session-id': 'sess-1' } : {});
    });
    const gw = await gatewayFor(up, { headers: { Authorization: 'Bearer upstream-own-token', 'X-Tenant': 'acme' } });
    assert.equal(await legacySession(gw.url), 'sess-1');
    const body = rpc(1, 'tools/list');
    const res = await post(gw.url, body, {
      ...LEGACY_HEADERS,
      authorization: 'Bearer client-secret',
      cookie: 'session=client-cookie',
      'mcp-session-id': 'sess-1',
      'mcp-protocol-version': '2025-11-25',
      'mcp-param-region': 'eu',
      'x-forwarded-for': '10.0.0.1',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    assert.equal(res.status, 200);
    // The client's request (Gatehouse may also have listed the upstream for itself). Its trace header is
    // also copied into `_meta` (2026-07-28 basic §OpenTelemetry trace context); nothing else changes.
    const seen = up.requests.find((r) => r.headers['mcp-session-id'] === 'sess-1' && r.body.includes('tools/list'))!;
    assert.ok(seen, 'the request reached the upstream');
    const expected = JSON.parse(body) as { params: Record<string, unknown> };
    expected.params._meta = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    assert.deepEqual(JSON.parse(seen.body), expected);
    for (const r of up.requests) assert.equal(r.headers.authorization, 'Bearer upstream-own-token');
    assert.equal(seen.headers.authorization, 'Bearer upstream-own-token');
    assert.equal(seen.headers.cookie, undefined);
    assert.equal(seen.headers['x-tenant'], 'acme');
    assert.equal(seen.headers['x-forwarded-for'], undefined);
    assert.equal(seen.headers['mcp-session-id'], 'sess-1');
    assert.equal(seen.headers['mcp-protocol-version'], '2025-11-25');
    // 2026-07-28's routing headers mean nothing on a legacy request, and nothing checked them against its body.
    assert.equal(seen.headers['mcp-param-region'], undefined);
    assert.equal(seen.headers.traceparent, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
  });

  test('a 2xx answer to a request that cannot be one (not JSON or SSE, no body, not one JSON object) → 502 for its id, not relayed', async () => {
    // A request's answer MUST be application/json (one JSON object) or text/event-stream (2025-11-25
    // transports.mdx §Sending Messages 5). Seen without a parse: the content type, and a whole body's first
    // and last characters. These once went to the client as they came, counted as answered.
    const answers: Record<string, { status: number; headers: Record<string, string>; body: string }> = {
      'prompts/list': { status: 200, headers: { 'content-type': 'text/html' }, body: '<html>sign in to the proxy</html>' },
      'resources/list': { status: 200, headers: { 'content-type': 'application/json' }, body: '<html>sign in to the proxy</html>' },
      'tools/list': { status: 200, headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":3,"result":{"tools":[' },
      'ping': { status: 202, headers: {}, body: '' },
      'resources/templates/list': { status: 200, headers: { 'content-type': 'application/json' }, body: '' },
      'completion/complete': { status: 200, headers: { 'content-type': 'Application/JSON; charset=utf-8' }, body: '\r\n {"jsonrpc":"2.0","id":6,"result":{"completion":{"values":[]}}}\n' },
    };
    const up = await fake((_req, res, body) => {
      const answer = answers[(JSON.parse(body) as { method: string }).method];
      if (answer === undefined) return void res.writeHead(202).end();
      res.writeHead(answer.status, answer.headers).end(answer.body);
    });
    const gw = await gatewayFor(up);
    let id = 0;
    for (const method of ['prompts/list', 'resources/list', 'tools/list', 'ping', 'resources/templates/list']) {
      const res = await post(gw.url, rpc(++id, method));
      assert.equal(res.status, 502, `${method}: ${res.text}`);
      assert.equal(res.json().id, id, method);
      assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE', method);
      assert.match(res.json().error.message, /answered a request with HTTP 20[02] and/, method);
    }
    // A JSON object, white space around it and its media type in capitals, goes on as it came.
    const fine = await post(gw.url, rpc(6, 'completion/complete', { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a', value: 'b' } }));
    assert.equal(fine.status, 200);
    assert.equal(fine.text, answers['completion/complete']!.body);
  });

  test('upstream status and JSON-RPC errors pass through unchanged (e.g. 404 for an unknown session)', async () => {
    const up = await fake((_req, res) => {
      const text = '{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}';
      res.writeHead(404, { 'content-type': 'application/json', 'content-length': String(text.length) });
      res.end(text);
    });
    const gw = await gatewayFor(up);
    const res = await post(gw.url, rpc(1, 'tools/list'));
    assert.equal(res.status, 404);
    assert.equal(res.text, '{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
    // Unchanged bytes keep their declared length instead of being re-sent chunked.
    assert.equal(res.headers['content-length'], String(res.text.length));
    assert.equal(res.headers['transfer-encoding'], undefined);
  });
});

describe('SSE relay', () => {
  test('events are relayed one by one as they arrive, with X-Accel-Buffering: no', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const up = await fake(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n');
      await released; // the second event is only written after the client has seen the first
      res.end('event: message\ndata: {"jsonrpc":"2.0","id":5,"result":{"content":[]}}\n\n');
    });
    const gw = await gatewayFor(up);
    const res = await request(gw.url, { method: 'POST', headers: LEGACY_HEADERS, body: rpc(5, 'tools/call', { name: 't' }) });
    assert.equal(res.headers['content-type'], 'text/event-stream');
    assert.equal(res.headers['x-accel-buffering'], 'no');
    const chunks: string[] = [];
    for await (const chunk of res.body) {
      chunks.push(String(chunk));
      if (chunks.length === 1) {
        assert.match(chunks[0]!, /notifications\/progress/);
        release();
      }
    }
    assert.match(chunks.join(''), /"id":5,"result"/);
  });

  test('a client that stops reading slows the upstream down instead of filling the gateway memory', async () => {
    const chunk = 'data: ' + 'x'.repeat(64 * 1024 - 8) + '\n\n';
    const total = 1024; // 64 MiB in all
    let written = 0;
    let finished = false;
    const up = await fake(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < total && !res.destroyed; i++) {
        written++;
        if (!res.write(chunk)) {
          await new Promise<void>((r) => {
            const done = (): void => {
              res.off('drain', done);
              res.off('close', done);
              r();
            };
            res.on('drain', done);
            res.on('close', done);
          });
        }
      }
      res.end();
      finished = true;
    });
    const gw = await gatewayFor(up);
    const res = await request(gw.url, { method: 'POST', headers: LEGACY_HEADERS, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/x' }) });
    await sleep(1500); // the client reads nothing meanwhile
    assert.ok(!finished, 'the upstream could not finish while the client was not reading');
    assert.ok(written < total / 4, `only socket buffers' worth was written (${written} of ${total} chunks)`);
    let received = 0;
    for await (const c of res.body) received += (c as Buffer).length;
    assert.equal(received, total * chunk.length);
  });

  test('a client that disconnects aborts the upstream request', async () => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((r) => (upstreamClosed = r));
    const up = await fake((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': started\n\n');
      res.on('close', () => upstreamClosed());
    });
    const gw = await gatewayFor(up);
    const ac = new AbortController();
    const res = await request(gw.url, { method: 'POST', headers: LEGACY_HEADERS, body: rpc(1, 'tools/call', { name: 'slow' }), signal: ac.signal });
    assert.equal(res.statusCode, 200);
    ac.abort();
    await Promise.race([closed, sleep(5000).then(() => assert.fail('upstream request was not aborted within 5 s'))]);
  });
});

describe('edge guards', () => {
  test('malformed JSON → 400 with -32700; a body over maxBodyBytes → 413 before upstream sees it', async () => {
    const up = await fake((_req, res, body) => jsonResult(res, body, {}));
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }], listen: { maxBodyBytes: 1024 } });
    cleanups.push(() => gw.close());
    const bad = await post(gw.url, '{"jsonrpc":');
    assert.equal(bad.status, 400);
    assert.equal(bad.json().error.code, -32700);
    const big = await post(gw.url, rpc(1, 'tools/call', { name: 'x', arguments: { blob: 'y'.repeat(4096) } }));
    assert.equal(big.status, 413);
    assert.equal(up.requests.length, 0);
  });

  test('/healthz is always ok; /readyz reflects whether the upstream answers', async () => {
    const up = await fake((_req, res) => {
      res.writeHead(405).end();
    });
    const good = await gatewayFor(up);
    const bad = await gatewayFor('http://127.0.0.1:1/mcp');
    assert.equal((await request(`${good.origin}/healthz`)).statusCode, 200);
    const ready = await request(`${good.origin}/readyz`);
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(await ready.body.json(), { status: 'ready', upstreams: { up: true }, store: { kind: 'sqlite', up: true } });
    const notReady = await request(`${bad.origin}/readyz`);
    assert.equal(notReady.statusCode, 503);
    assert.deepEqual(await notReady.body.json(), { status: 'not_ready', upstreams: { up: false }, store: { kind: 'sqlite', up: true } });
  });
});
