// Tracing (issue 18 item 1): the upstream request is a CLIENT span, child of the call's SERVER span, and the
// upstream receives THAT span's context (traceparent with the CLIENT span's id, the same trace id), in the
// headers and in `_meta` wherever Gatehouse sends trace context: the Streamable HTTP pass-through (legacy
// and modern), both bridges, the catalog, stdio servers (legacy and modern, shared and perSession) and an
// HTTP+SSE server. When the call is not sampled, the upstream gets the client's own bytes.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';
import { hex, SPAN_KIND, startReceiver, waitFor, type OtlpSpan, type Receiver } from '../helpers/otlp.js';

const META_ECHO = fileURLToPath(new URL('../fixtures/upstreams/meta-echo-stdio.mjs', import.meta.url));
const TRACESTATE = 'vendor=abc';

type Msg = { id?: unknown; method?: string; params?: { _meta?: Record<string, unknown>; name?: string } };
type Meta = Record<string, unknown>;

const cleanups: Array<() => Promise<unknown>> = [];
let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
});
after(async () => {
  for (const c of cleanups.reverse()) await c();
  await receiver.close();
});

async function gateway(config: Record<string, unknown>, tracing: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway({ ...config, tracing: { enabled: true, endpoint: receiver.url, ...tracing } });
  cleanups.push(() => gw.close());
  return gw;
}

/** An HTTP upstream that answers tools/list with `echo` and tools/call with ok, recording every request. */
async function httpUpstream(era: true | 'modern'): Promise<FakeUpstream> {
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const msg = JSON.parse(body) as Msg;
    if (msg.id === undefined) return void res.writeHead(202).end();
    const complete = era === 'modern' ? { resultType: 'complete' } : {};
    const result = msg.method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 't', version: '1' } } : msg.method === 'tools/list' ? { tools: [{ name: 'echo', inputSchema: { type: 'object' } }], ...complete } : { content: [{ type: 'text', text: 'ok' }], ...complete };
    res.writeHead(200, { 'content-type': 'application/json', ...(msg.method === 'initialize' ? { 'mcp-session-id': 'up-session' } : {}) }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  }, { handshake: era });
  cleanups.push(() => up.close());
  return up;
}

/** The last tools/call the HTTP upstream received: its trace headers and `_meta`. */
function seenOver(up: FakeUpstream | SseUpstream) {
  const r = [...up.requests].reverse().find((x) => x.body.includes('"tools/call"'));
  assert.ok(r, 'the call reached the upstream');
  return { headers: r.headers, meta: (JSON.parse(r.body) as Msg).params?._meta ?? {}, body: r.body };
}

/** The JSON-RPC response in an answer, JSON or SSE. */
function answerOf(text: string): { result?: { content?: Array<{ text?: string }>; isError?: boolean }; error?: unknown } {
  if (text.trimStart().startsWith('{')) return JSON.parse(text) as never;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const m = JSON.parse(line.slice(5)) as { id?: unknown; result?: never; error?: never };
    if (m.id !== undefined && (m.result !== undefined || m.error !== undefined)) return m;
  }
  throw new Error(`no response in ${text}`);
}

/** What a stdio (meta-echo) server saw: the `_meta` its tool echoes back. */
function echoedMeta(text: string): Meta {
  const answer = answerOf(text);
  assert.ok(answer.result && answer.result.isError !== true, `a result: ${text}`);
  return JSON.parse(answer.result.content![0]!.text!) as Meta;
}

/**
 * The spans of a call: the SERVER span (child of the client's span) and its one CLIENT span; asserts that
 * the traceparent(s) the upstream received are the CLIENT span's.
 */
async function assertUpstreamGotClientSpan(traceId: string, clientSpan: string, seen: Array<unknown>): Promise<{ server: OtlpSpan; client: OtlpSpan }> {
  const server = await waitFor('the SERVER span', () => receiver.spans.find((s) => s.traceId === traceId && s.kind === SPAN_KIND.SERVER));
  assert.equal(server.parentSpanId, clientSpan, "the SERVER span's parent is the client's span");
  const client = await waitFor('the CLIENT span', () => receiver.spans.find((s) => s.traceId === traceId && s.kind === SPAN_KIND.CLIENT));
  assert.equal(client.parentSpanId, server.spanId, "the CLIENT span's parent is the SERVER span");
  assert.equal(receiver.spans.filter((s) => s.traceId === traceId && s.kind === SPAN_KIND.CLIENT).length, 1, 'one CLIENT span');
  assert.ok(seen.length > 0);
  for (const tp of seen) assert.equal(tp, `00-${traceId}-${client.spanId}-01`, 'the upstream received the CLIENT span context');
  return { server, client };
}

const traced = () => {
  const traceId = hex(16);
  const clientSpan = hex(8);
  return { traceId, clientSpan, traceparent: `00-${traceId}-${clientSpan}-01` };
};

describe('Streamable HTTP upstreams', () => {
  test('legacy pass-through: the CLIENT span context goes up as headers and in _meta, tracestate kept', async () => {
    const up = await httpUpstream(true);
    const gw = await gateway({ upstreams: [{ name: 'up', url: up.url }] });
    const session = await legacySession(gw.url);
    const t = traced();
    const res = await post(gw.url, rpc(7, 'tools/call', { name: 'echo', arguments: {} }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', traceparent: t.traceparent, tracestate: TRACESTATE });
    assert.equal(res.status, 200, res.text);
    const seen = seenOver(up);
    await assertUpstreamGotClientSpan(t.traceId, t.clientSpan, [seen.headers.traceparent, seen.meta.traceparent]);
    assert.equal(seen.headers.tracestate, TRACESTATE);
    assert.equal(seen.meta.tracestate, TRACESTATE);
  });

  test('modern pass-through: trace context sent only in _meta; the CLIENT span context goes up in both places', async () => {
    const up = await httpUpstream('modern');
    const gw = await gateway({ upstreams: [{ name: 'up', url: up.url }] });
    const t = traced();
    const req = modernRequest(8, 'tools/call', { name: 'echo', arguments: {}, _meta: { traceparent: t.traceparent } });
    assert.equal((await post(gw.url, req.body, req.headers)).status, 200);
    const seen = seenOver(up);
    await assertUpstreamGotClientSpan(t.traceId, t.clientSpan, [seen.headers.traceparent, seen.meta.traceparent]);
    // The rest of the body is the client's.
    assert.deepEqual({ ...(JSON.parse(seen.body) as Msg), params: { ...(JSON.parse(seen.body) as Msg).params, _meta: {} } }, { ...(JSON.parse(req.body) as Msg), params: { ...(JSON.parse(req.body) as Msg).params, _meta: {} } });
  });

  test('bridged, modern client to a legacy upstream: headers and _meta', async () => {
    const up = await httpUpstream(true);
    const gw = await gateway({ upstreams: [{ name: 'up', url: up.url }] });
    const t = traced();
    const req = modernRequest(9, 'tools/call', { name: 'echo', arguments: {} });
    const res = await post(gw.url, req.body, { ...req.headers, traceparent: t.traceparent });
    assert.equal(res.status, 200, res.text);
    const seen = seenOver(up);
    await assertUpstreamGotClientSpan(t.traceId, t.clientSpan, [seen.headers.traceparent, seen.meta.traceparent]);
  });

  test('bridged, legacy client to a modern upstream: headers and _meta', async () => {
    const up = await httpUpstream('modern');
    const gw = await gateway({ upstreams: [{ name: 'up', url: up.url }] });
    const session = await legacySession(gw.url);
    const t = traced();
    const res = await post(gw.url, rpc(10, 'tools/call', { name: 'echo', arguments: {} }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', traceparent: t.traceparent });
    assert.equal(res.status, 200, res.text);
    assert.equal(answerOf(res.text).result?.content?.[0]?.text, 'ok');
    const seen = seenOver(up);
    await assertUpstreamGotClientSpan(t.traceId, t.clientSpan, [seen.headers.traceparent, seen.meta.traceparent]);
  });

  test('the catalog (two upstreams): headers and _meta', async () => {
    const [a, b] = [await httpUpstream('modern'), await httpUpstream('modern')];
    const gw = await gateway({ upstreams: [{ name: 'a', url: a.url }, { name: 'b', url: b.url }] });
    const list = modernRequest(11, 'tools/list');
    const names = ((await post(gw.url, list.body, list.headers)).json().result.tools as Array<{ name: string }>).map((x) => x.name);
    const name = names.find((x) => x.startsWith('b'));
    assert.ok(name, `tools: ${names.join(', ')}`);
    const t = traced();
    const req = modernRequest(12, 'tools/call', { name, arguments: {} });
    const res = await post(gw.url, req.body, { ...req.headers, traceparent: t.traceparent });
    assert.equal(res.status, 200, res.text);
    const seen = seenOver(b);
    await assertUpstreamGotClientSpan(t.traceId, t.clientSpan, [seen.headers.traceparent, seen.meta.traceparent]);
  });

  test('not sampled (the client decided so): the upstream gets the client bytes and trace context unchanged, and no span is exported', async () => {
    const up = await httpUpstream('modern');
    const gw = await gateway({ upstreams: [{ name: 'up', url: up.url }] }, { sampleRatio: 0 });
    const traceId = hex(16);
    const unsampled = `00-${traceId}-${hex(8)}-00`;
    const req = modernRequest(13, 'tools/call', { name: 'echo', arguments: {}, _meta: { traceparent: unsampled } });
    assert.equal((await post(gw.url, req.body, { ...req.headers, traceparent: unsampled })).status, 200);
    const seen = seenOver(up);
    assert.equal(seen.body, req.body, 'the very bytes the client sent');
    assert.equal(seen.headers.traceparent, unsampled);
    await new Promise((r) => setTimeout(r, 1500));
    assert.ok(!receiver.spans.some((s) => s.traceId === traceId), 'nothing recorded');
  });
});

describe('stdio upstreams (the server echoes the _meta it got)', () => {
  test('a legacy server, modern client (bridged): _meta', async () => {
    const gw = await gateway({ upstreams: [{ name: 'echo', command: [process.execPath, META_ECHO, 'legacy'] }] });
    const t = traced();
    const req = modernRequest(20, 'tools/call', { name: 'echo_meta', arguments: {} });
    const res = await post(gw.url, req.body, { ...req.headers, traceparent: t.traceparent });
    await assertUpstreamGotClientSpan(t.traceId, t.clientSpan, [echoedMeta(res.text).traceparent]);
  });

  for (const processes of ['shared', 'perSession'] as const) {
    test(`a legacy server, legacy client (processes: ${processes}): _meta`, async () => {
      const gw = await gateway({ upstreams: [{ name: 'echo', command: [process.execPath, META_ECHO, 'legacy'], processes }] });
      const session = await legacySession(gw.url);
      const t = traced();
      const res = await post(gw.url, rpc(21, 'tools/call', { name: 'echo_meta', arguments: {} }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', traceparent: t.traceparent });
      await assertUpstreamGotClientSpan(t.traceId, t.clientSpan, [echoedMeta(res.text).traceparent]);
    });
  }

  test('a modern server, modern and legacy clients: _meta', async () => {
    const gw = await gateway({ upstreams: [{ name: 'echo', command: [process.execPath, META_ECHO, 'modern'] }] });
    const t = traced();
    const req = modernRequest(22, 'tools/call', { name: 'echo_meta', arguments: {} });
    const res = await post(gw.url, req.body, { ...req.headers, traceparent: t.traceparent });
    await assertUpstreamGotClientSpan(t.traceId, t.clientSpan, [echoedMeta(res.text).traceparent]);

    const session = await legacySession(gw.url);
    const u = traced();
    const legacy = await post(gw.url, rpc(23, 'tools/call', { name: 'echo_meta', arguments: {} }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', traceparent: u.traceparent });
    await assertUpstreamGotClientSpan(u.traceId, u.clientSpan, [echoedMeta(legacy.text).traceparent]);
  });
});

interface SseUpstream {
  url: string;
  requests: Array<{ headers: Record<string, unknown>; body: string }>;
  close(): Promise<void>;
}

/** An HTTP+SSE (2024-11-05) server: GET /sse opens the stream (first event: the endpoint), POST /messages answers on it. */
async function startSseUpstream(): Promise<SseUpstream> {
  const requests: SseUpstream['requests'] = [];
  const streams = new Map<string, ServerResponse>();
  let next = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET' && url.pathname === '/sse') {
      const id = String(++next);
      streams.set(id, res);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(`event: endpoint\ndata: /messages?session=${id}\n\n`);
      req.on('close', () => streams.delete(id));
      return;
    }
    if (req.method === 'POST' && url.pathname === '/messages') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        requests.push({ headers: req.headers, body });
        const stream = streams.get(url.searchParams.get('session') ?? '');
        if (!stream) return void res.writeHead(404).end();
        res.writeHead(202).end();
        const msg = JSON.parse(body) as Msg & { params?: { protocolVersion?: string } };
        if (msg.id === undefined || msg.method === undefined) return;
        const answer = (m: object) => stream.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...m })}\n\n`);
        if (msg.method === 'initialize') return answer({ result: { protocolVersion: msg.params?.protocolVersion ?? '2024-11-05', capabilities: { tools: {} }, serverInfo: { name: 'sse', version: '1' } } });
        if (msg.method === 'tools/list') return answer({ result: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] } });
        if (msg.method === 'tools/call') return answer({ result: { content: [{ type: 'text', text: 'ok' }] } });
        if (msg.method === 'ping') return answer({ result: {} });
        answer({ error: { code: -32601, message: 'Method not found' } });
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    requests,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

describe('an HTTP+SSE upstream', () => {
  let up: SseUpstream;
  let gw: TestGateway;
  before(async () => {
    up = await startSseUpstream();
    cleanups.push(() => up.close());
    gw = await gateway({ upstreams: [{ name: 'sse', url: up.url, transport: 'sse' }] });
  });

  test('modern client (bridged): _meta', async () => {
    const t = traced();
    const req = modernRequest(30, 'tools/call', { name: 'echo', arguments: {} });
    const res = await post(gw.url, req.body, { ...req.headers, traceparent: t.traceparent });
    assert.equal(res.status, 200, res.text);
    await assertUpstreamGotClientSpan(t.traceId, t.clientSpan, [seenOver(up).meta.traceparent]);
  });

  test('legacy client: _meta', async () => {
    const session = await legacySession(gw.url);
    const t = traced();
    const res = await post(gw.url, rpc(31, 'tools/call', { name: 'echo', arguments: {} }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', traceparent: t.traceparent });
    assert.equal(answerOf(res.text).result?.content?.[0]?.text, 'ok', res.text);
    await assertUpstreamGotClientSpan(t.traceId, t.clientSpan, [seenOver(up).meta.traceparent]);
  });
});
