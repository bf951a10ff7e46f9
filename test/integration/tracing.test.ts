// Tracing (issue 18): one SERVER span per MCP request, exported over OTLP/HTTP. The collector here is a
// real OTLP/HTTP receiver (POST /v1/traces, JSON ExportTraceServiceRequest, as the exporter sends by
// default); calls go through Gatehouse with a client `traceparent`, to a real MCP upstream.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { hashKey } from '../../src/auth/key-hash.js';
import { tracesEndpoint } from '../../src/tracing/tracing.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { attr, hex, SPAN_KIND, startReceiver, waitFor, type Receiver } from '../helpers/otlp.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';

describe('tracing on: spans reach an OTLP/HTTP receiver', () => {
  let up: CountingUpstream;
  let receiver: Receiver;
  let gw: TestGateway;
  let n = 0;
  before(async () => {
    up = await startCountingUpstream('modern');
    receiver = await startReceiver();
    gw = await startGateway({
      upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
      auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), tenant: 'acme', scopes: [] }] },
      policy: { rateLimits: [{ id: 'one-record', per: 'key', tools: ['up/record'], rate: 1, perSeconds: 3600, burst: 1 }] },
      tracing: { enabled: true, endpoint: receiver.url, resourceAttributes: { 'deployment.environment.name': 'test' } },
    });
  });
  after(async () => {
    await gw.close();
    await up.close();
    await receiver.close();
  });

  async function call(name: string, args: Record<string, unknown>, traceparent?: string) {
    const req = modernRequest(++n, 'tools/call', { name, arguments: args });
    return post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}`, ...(traceparent ? { traceparent } : {}) });
  }

  test('a call is a SERVER span, child of the client span, with the MCP and Gatehouse attributes', async () => {
    const traceId = hex(16);
    const clientSpan = hex(8);
    const res = await call('lookup', { item: 'traced' }, `00-${traceId}-${clientSpan}-01`);
    assert.equal(res.status, 200);
    assert.notEqual(res.json().result.isError, true);
    const span = await waitFor('the lookup span', () => receiver.spans.find((s) => s.traceId === traceId && s.parentSpanId === clientSpan));
    assert.equal(span.name, 'tools/call lookup');
    assert.equal(span.kind, 2, 'SPAN_KIND_SERVER');
    assert.equal(span.parentSpanId, clientSpan);
    assert.notEqual(span.spanId, clientSpan);
    assert.equal(attr(span, 'mcp.method.name'), 'tools/call');
    assert.equal(attr(span, 'mcp.protocol.version'), '2026-07-28');
    assert.equal(attr(span, 'jsonrpc.request.id'), String(n));
    assert.equal(attr(span, 'gen_ai.tool.name'), 'lookup');
    assert.equal(attr(span, 'gen_ai.operation.name'), 'execute_tool');
    assert.equal(attr(span, 'gatehouse.tool_ref'), 'up/lookup');
    assert.equal(attr(span, 'gatehouse.upstream'), 'up');
    assert.equal(attr(span, 'enduser.id'), 'key:alice');
    assert.equal(attr(span, 'gatehouse.tenant'), 'acme');
    assert.equal(attr(span, 'gatehouse.outcome'), 'ok');
    assert.equal(attr(span, 'gatehouse.refusal_code'), undefined);
    assert.notEqual(span.status?.code, 2, 'not an error');
    // The upstream request is a CLIENT span, child of the call's, inside it.
    const upstream = await waitFor('the CLIENT span', () => receiver.spans.find((s) => s.traceId === traceId && s.parentSpanId === span.spanId && s.kind === SPAN_KIND.CLIENT));
    assert.equal(upstream.name, 'tools/call lookup');
    assert.equal(attr(upstream, 'gatehouse.upstream'), 'up');
    assert.equal(attr(upstream, 'mcp.method.name'), 'tools/call');
    assert.equal(attr(upstream, 'gen_ai.tool.name'), 'lookup');
    assert.ok(BigInt(upstream.startTimeUnixNano) >= BigInt(span.startTimeUnixNano) && BigInt(upstream.endTimeUnixNano) <= BigInt(span.endTimeUnixNano), 'inside the call span');
    assert.equal(receiver.spans.filter((s) => s.traceId === traceId && s.kind === SPAN_KIND.CLIENT).length, 1, 'one CLIENT span');
    assert.ok(BigInt(span.endTimeUnixNano) > BigInt(span.startTimeUnixNano));
    // Never a credential in a span.
    assert.ok(!JSON.stringify(span).includes(ALICE));
    // The resource names the service and carries the configured attributes.
    const resource = receiver.resources[0]!;
    assert.equal(attr({ attributes: resource }, 'service.name'), 'gatehouse');
    assert.equal(attr({ attributes: resource }, 'deployment.environment.name'), 'test');
    // The upstream receives the CLIENT span's context, not the client's own.
    assert.ok(up.received.some((b) => b.includes(`00-${traceId}-${upstream.spanId}-01`)), 'the upstream got the CLIENT span context');
    assert.ok(!up.received.some((b) => b.includes(`00-${traceId}-${clientSpan}-01`)), 'and not the client span context');
  });

  test('a refused call carries its refusal code, as an attribute and as a span event; its status is ERROR', async () => {
    const traceId = hex(16);
    const clientSpan = hex(8);
    assert.notEqual((await call('record', { item: 'first' })).json().result.isError, true);
    const refused = await call('record', { item: 'second' }, `00-${traceId}-${clientSpan}-01`);
    assert.equal(refused.json().result.structuredContent.error.code, 'rate_limited');
    const span = await waitFor('the refused span', () => receiver.spans.find((s) => s.traceId === traceId && s.parentSpanId === clientSpan));
    assert.equal(span.name, 'tools/call record');
    assert.equal(span.parentSpanId, clientSpan);
    assert.equal(attr(span, 'gatehouse.outcome'), 'refused');
    assert.equal(attr(span, 'gatehouse.refusal_code'), 'rate_limited');
    assert.equal(attr(span, 'gatehouse.rule'), 'one-record');
    assert.equal(attr(span, 'error.type'), 'rate_limited');
    assert.equal(span.status?.code, 2, 'STATUS_CODE_ERROR');
    const event = span.events?.find((e) => e.name === 'gatehouse.refusal');
    assert.ok(event, 'a refusal event');
    assert.equal(attr(event, 'gatehouse.refusal_code'), 'rate_limited');
    assert.ok(typeof attr(event, 'gatehouse.stage') === 'string');
    assert.ok(!receiver.spans.some((s) => s.parentSpanId === span.spanId && s.kind === SPAN_KIND.CLIENT), 'a call refused before the upstream has no CLIENT span');
    // Its wait on the store for the rate limit is a child span.
    const take = await waitFor('the rate-limit wait', () => receiver.spans.find((s) => s.parentSpanId === span.spanId && s.name === 'rateLimit store.take'));
    assert.equal(take.kind, SPAN_KIND.INTERNAL);
  });

  test('a request refused by auth is a root span with its refusal code', async () => {
    const req = modernRequest(++n, 'tools/call', { name: 'lookup', arguments: { item: 'x' } });
    const res = await post(gw.url, req.body, { ...req.headers, authorization: 'Bearer gh_nobody_0123456789abcdefghijklmnopqrs' });
    assert.equal(res.status, 401);
    const span = await waitFor('the auth span', () => receiver.spans.find((s) => attr(s, 'gatehouse.refusal_stage') === 'auth'));
    assert.equal(attr(span, 'gatehouse.outcome'), 'refused');
    assert.equal(typeof attr(span, 'gatehouse.refusal_code'), 'string');
    assert.equal(attr(span, 'enduser.id'), undefined);
    assert.equal(span.status?.code, 2);
  });

  test('without a client trace context, a call is a root span', async () => {
    const before = receiver.spans.length;
    await call('lookup', { item: 'root' });
    const span = await waitFor('a root span', () => receiver.spans.slice(before).find((s) => s.name === 'tools/call lookup' && s.kind === SPAN_KIND.SERVER));
    assert.ok(!span.parentSpanId, 'no parent');
  });

  // W3C Trace Context's test suite, test_traceparent_duplicated: two traceparent fields are no context, and
  // the receiver starts a new trace (until the eleventh session, Gatehouse refused the request with 400).
  test('two traceparent fields: the call runs as a root span of a new trace, and the upstream gets that trace', async () => {
    const first = `00-${hex(16)}-${hex(8)}-01`;
    const second = `00-${hex(16)}-${hex(8)}-01`;
    const ids = [first, second].map((t) => t.split('-')[1]);
    const before = receiver.spans.length;
    const req = modernRequest(++n, 'tools/call', { name: 'lookup', arguments: { item: 'twice-traced' } });
    const res = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}`, traceparent: [first, second] });
    assert.equal(res.status, 200, res.text);
    assert.notEqual(res.json().result.isError, true, res.text);
    const span = await waitFor('the call span', () => receiver.spans.slice(before).find((s) => s.name === 'tools/call lookup' && s.kind === SPAN_KIND.SERVER));
    assert.ok(!ids.includes(span.traceId), 'a new trace id');
    assert.ok(!span.parentSpanId, 'no parent');
    const upstream = await waitFor('the CLIENT span', () => receiver.spans.find((s) => s.parentSpanId === span.spanId && s.kind === SPAN_KIND.CLIENT));
    assert.ok(up.received.some((b) => b.includes(`00-${span.traceId}-${upstream.spanId}-01`)), 'the upstream got the new trace');
    assert.ok(!up.received.some((b) => ids.some((id) => b.includes(id!))), "and neither of the client's");
  });
});

describe('a governed call: its waits on the store and the network are child spans', () => {
  let up: CountingUpstream;
  let receiver: Receiver;
  let gw: TestGateway;
  let n = 0;
  const RESOLVE_MS = 40;
  before(async () => {
    up = await startCountingUpstream('modern');
    receiver = await startReceiver();
    gw = await startGateway(
      {
        upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
        // The SQLite store (the test helper's default), with every governed stage that waits on it.
        policy: {
          egress: [{ id: 'partners', tools: ['up/record'], allow: { hosts: ['*.partner.example'] } }],
          rateLimits: [
            { id: 'address', per: 'ip', rate: 100, perSeconds: 60, burst: 100 },
            { id: 'calls', per: 'subject', rate: 100, perSeconds: 60, burst: 100 },
          ],
          budgets: [{ id: 'daily', per: 'subject', window: 'day', limit: 1000 }],
          breakers: [{ id: 'health', per: 'upstream', consecutiveFailures: 5, coolDownSeconds: 1 }],
          approvals: [{ id: 'failing-writes', tools: ['up/record_fails'] }],
        },
        admin: { enabled: true, port: 0, token: 'admin-token-0123456789abcdef' },
        tracing: { enabled: true, endpoint: receiver.url },
      },
      // A resolver that takes its time, as DNS may: the egress span shows it.
      { resolveHost: async () => { await new Promise((r) => setTimeout(r, RESOLVE_MS)); return ['93.184.216.34']; } },
    );
  });
  after(async () => {
    await gw.close();
    await up.close();
    await receiver.close();
  });

  async function call(name: string, args: Record<string, unknown>, traceparent: string, meta: Record<string, unknown> = {}) {
    const req = modernRequest(++n, 'tools/call', { name, arguments: args, _meta: meta });
    return post(gw.url, req.body, { ...req.headers, traceparent });
  }

  test('the per-address rate limit, rate limit, budget, breaker, egress DNS, idempotency and the audit append each show as a child span inside the call', async () => {
    const traceId = hex(16);
    const res = await call('record', { item: 'https://api.partner.example/orders' }, `00-${traceId}-${hex(8)}-01`, { idempotencyKey: `trace-${hex(8)}` });
    assert.equal(res.status, 200);
    assert.notEqual(res.json().result.isError, true, res.text);
    const server = await waitFor('the SERVER span', () => receiver.spans.find((s) => s.traceId === traceId && s.kind === SPAN_KIND.SERVER));
    const expected = ['rateLimit store.take (address)', 'rateLimit store.take', 'budget store.spend', 'breaker store.admit', 'egress dns.resolve', 'idempotency store.claim', 'idempotency store.complete', 'audit store.append'];
    const children = await waitFor('the wait spans', () => {
      const found = receiver.spans.filter((s) => s.traceId === traceId && s.parentSpanId === server.spanId);
      return expected.every((name) => found.some((s) => s.name === name)) ? found : undefined;
    });
    for (const name of expected) {
      const span = children.find((s) => s.name === name)!;
      assert.equal(span.kind, SPAN_KIND.INTERNAL, name);
      assert.equal(attr(span, 'gatehouse.stage'), name.split(' ')[0]);
      assert.equal(attr(span, 'gatehouse.wait'), name.split(' ').slice(1).join(' '));
      assert.ok(BigInt(span.startTimeUnixNano) >= BigInt(server.startTimeUnixNano) && BigInt(span.endTimeUnixNano) <= BigInt(server.endTimeUnixNano), `${name} inside the call span`);
    }
    // Where the time went: the slow resolver is the egress span's.
    const dns = children.find((s) => s.name === 'egress dns.resolve')!;
    assert.ok(Number(BigInt(dns.endTimeUnixNano) - BigInt(dns.startTimeUnixNano)) / 1e6 >= RESOLVE_MS - 5, 'the egress span covers the DNS wait');
    // Stages run in order: the rate limit's wait ends before the budget's starts, and both before the upstream request.
    const at = (name: string, edge: 'startTimeUnixNano' | 'endTimeUnixNano') => BigInt(children.find((s) => s.name === name)![edge]);
    const client = children.find((s) => s.kind === SPAN_KIND.CLIENT);
    assert.ok(client, 'the upstream request');
    assert.ok(at('rateLimit store.take (address)', 'endTimeUnixNano') <= at('rateLimit store.take', 'startTimeUnixNano'), 'the edge checks the address first');
    assert.ok(at('rateLimit store.take', 'endTimeUnixNano') <= at('budget store.spend', 'startTimeUnixNano'));
    assert.ok(at('idempotency store.claim', 'endTimeUnixNano') <= BigInt(client.startTimeUnixNano));
    assert.ok(at('audit store.append', 'startTimeUnixNano') >= BigInt(client.startTimeUnixNano));
  });

  test('every stage that decides passes the call with an event on its span, in the pipeline order', async () => {
    const traceId = hex(16);
    const res = await call('record', { item: 'https://api.partner.example/decided' }, `00-${traceId}-${hex(8)}-01`, { idempotencyKey: `decide-${hex(8)}` });
    assert.notEqual(res.json().result.isError, true, res.text);
    const server = await waitFor('the SERVER span', () => receiver.spans.find((s) => s.traceId === traceId && s.kind === SPAN_KIND.SERVER));
    const passed = (server.events ?? []).filter((e) => e.name === 'gatehouse.stage').map((e) => {
      assert.equal(attr(e, 'gatehouse.decision'), 'pass');
      return attr(e, 'gatehouse.stage');
    });
    // The order of src/pipeline/order.ts; auth is decided at the edge, before the call starts.
    const expected = ['auth', 'state', 'resolve', 'access', 'arguments', 'egress', 'rateLimit', 'budget', 'breaker', 'approval', 'idempotency'];
    assert.deepEqual(passed.filter((s) => expected.includes(String(s))), expected, `stage events: ${passed.join(', ')}`);
  });

  test("an approval the call waits for: the approval stage's store wait is a child span", async () => {
    const traceId = hex(16);
    const res = await call('record_fails', { item: 'needs approval' }, `00-${traceId}-${hex(8)}-01`);
    assert.equal(res.json().result.structuredContent.error.code, 'approval_pending');
    const server = await waitFor('the SERVER span', () => receiver.spans.find((s) => s.traceId === traceId && s.kind === SPAN_KIND.SERVER));
    const verdict = await waitFor('the approval wait', () => receiver.spans.find((s) => s.traceId === traceId && s.parentSpanId === server.spanId && s.name === 'approval store.verdict'));
    assert.equal(verdict.kind, SPAN_KIND.INTERNAL);
    assert.ok(!receiver.spans.some((s) => s.traceId === traceId && s.kind === SPAN_KIND.CLIENT), 'nothing went upstream');
  });
});

describe('a collector that is down', () => {
  let up: CountingUpstream;
  before(async () => {
    up = await startCountingUpstream('modern');
  });
  after(async () => {
    await up.close();
  });

  test('refusing connections: calls never fail, and the gateway still closes', async () => {
    // A port that was just free and is closed now: connections are refused.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const closedPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], tracing: { enabled: true, endpoint: `http://127.0.0.1:${closedPort}/v1/traces` } });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => {
      const req = modernRequest(i + 1, 'tools/call', { name: 'lookup', arguments: { item: `down-${i}` } });
      return post(gw.url, req.body, { ...req.headers, traceparent: `00-${hex(16)}-${hex(8)}-01` });
    }));
    assert.deepEqual(results.map((r) => r.status), Array(50).fill(200));
    assert.ok(results.every((r) => r.json().result.isError !== true));
    await gw.close();
  });

  test('accepting an export and never answering it: calls are answered while that export hangs', async () => {
    // The export is in flight and unanswered for the whole of the calls below. The export timeout is set far
    // longer than this test waits for all the calls together, so a call made to wait on the export (a span
    // export on the call's path: the answer held until a flush), even one that then ignores the export's
    // failure, is not answered within CALLS_WAIT_MS and the test fails on it instead of waiting it out.
    const CALLS_WAIT_MS = 20_000;
    const EXPORT_TIMEOUT_MS = 10 * CALLS_WAIT_MS;
    const held: import('node:http').ServerResponse[] = [];
    let holding = true;
    const stalled = createServer((req, res) => {
      req.resume();
      if (holding) held.push(res);
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((r) => stalled.listen(0, '127.0.0.1', r));
    const port = (stalled.address() as AddressInfo).port;
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], tracing: { enabled: true, endpoint: `http://127.0.0.1:${port}/v1/traces` } }, { tracingExportTimeoutMs: EXPORT_TIMEOUT_MS });
    const calls = AbortSignal.timeout(CALLS_WAIT_MS);
    const answered = (body: string, headers: Record<string, string>) => post(gw.url, body, headers, calls).catch((err: unknown) => {
      throw calls.aborted ? new Error(`a call was not answered within ${CALLS_WAIT_MS} ms of the first: it waited on the held export`) : err;
    });
    try {
      const first = modernRequest(1, 'tools/call', { name: 'lookup', arguments: { item: 'before' } });
      assert.equal((await answered(first.body, first.headers)).status, 200);
      await waitFor('an export request the collector holds', () => (held.length > 0 ? true : undefined));
      for (let i = 0; i < 10; i++) {
        const req = modernRequest(100 + i, 'tools/call', { name: 'lookup', arguments: { item: `after-${i}` } });
        const res = await answered(req.body, { ...req.headers, traceparent: `00-${hex(16)}-${hex(8)}-01` });
        assert.equal(res.status, 200);
        assert.notEqual(res.json().result.isError, true);
      }
      assert.ok(held.every((res) => !res.writableEnded), 'the export was still unanswered when the calls were answered');
    } finally {
      // The held exports are cut and later ones answered, so closing (which waits for the last spans, at most
      // the export timeout) ends at once rather than after EXPORT_TIMEOUT_MS.
      holding = false;
      for (const res of held) res.destroy();
      await boundedClose(gw, CALLS_WAIT_MS);
      stalled.closeAllConnections();
      await new Promise<void>((r) => stalled.close(() => r()));
    }
  });
});

/** Closes the gateway, failing (instead of hanging the file) if that takes longer than `ms`. */
async function boundedClose(gw: TestGateway, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the gateway did not close within ${ms} ms`)), ms);
  });
  try {
    await Promise.race([gw.close(), late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('tracing off', () => {
  test('no exporter request and no OpenTelemetry SDK or exporter module loaded, even with OTEL_* variables set', async () => {
    const receiver = await startReceiver();
    try {
      const root = fileURLToPath(new URL('../../', import.meta.url));
      const script = `
        import { createRequire } from 'node:module';
        const { startGateway } = await import(${JSON.stringify(pathToFileURL(`${root}test/helpers/gateway.ts`).href)});
        const { startCountingUpstream } = await import(${JSON.stringify(pathToFileURL(`${root}test/fixtures/upstreams/counting-writes.ts`).href)});
        const { modernRequest, post } = await import(${JSON.stringify(pathToFileURL(`${root}test/helpers/http.ts`).href)});
        const up = await startCountingUpstream('modern');
        const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }] });
        const req = modernRequest(1, 'tools/call', { name: 'lookup', arguments: { item: 'untraced' } });
        const res = await post(gw.url, req.body, { ...req.headers, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
        await gw.close();
        await up.close();
        // prom-client (always loaded) loads @opentelemetry/api for its exemplars; the SDK and the exporter are ours.
        const otel = Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes('@opentelemetry') && !f.includes('/@opentelemetry/api/'));
        process.stdout.write(JSON.stringify({ status: res.status, otel }));
      `;
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: root,
        env: { ...process.env, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url.replace('/v1/traces', ''), OTEL_SERVICE_NAME: 'off' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      const code = await new Promise<number | null>((r) => child.on('exit', r));
      assert.equal(code, 0);
      const result = JSON.parse(out) as { status: number; otel: string[] };
      assert.equal(result.status, 200);
      assert.deepEqual(result.otel, [], 'no @opentelemetry SDK module was loaded');
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(receiver.requests, 0);
    } finally {
      await receiver.close();
    }
  });
});

describe('the endpoint', () => {
  test('config first, then OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, then the default', () => {
    const env = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/custom', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://base:4318/' };
    assert.equal(tracesEndpoint({ endpoint: 'http://cfg:4318/v1/traces' }, env), 'http://cfg:4318/v1/traces');
    assert.equal(tracesEndpoint({}, env), 'http://traces:4318/custom');
    assert.equal(tracesEndpoint({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://base:4318/' }), 'http://base:4318/v1/traces');
    assert.equal(tracesEndpoint({}, {}), 'http://localhost:4318/v1/traces');
  });
});

describe('the answer error code comes from the edge, not from the answer event', () => {
  test('a relayed JSON-RPC error sets rpc.jsonrpc.error_code; tracing alone never makes answers wait (no answer subscriber)', async () => {
    const { startFakeUpstream } = await import('../fixtures/upstreams/fake-upstream.js');
    const { channels } = await import('../../src/pipeline/events.js');
    const bad = await startFakeUpstream(
      (_req, res, body) => {
        const msg = JSON.parse(body) as { id?: unknown; method: string };
        if (msg.id === undefined) return void res.writeHead(202).end();
        const answer =
          msg.method === 'tools/list'
            ? { jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'boom', inputSchema: { type: 'object' } }], resultType: 'complete' } }
            : { jsonrpc: '2.0', id: msg.id, error: { code: -32050, message: 'the tool said no' } };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      },
      { handshake: 'modern' },
    );
    const receiver = await startReceiver();
    const gw = await startGateway({ upstreams: [{ name: 'bad', url: bad.url, era: 'modern' }], audit: { enabled: false }, tracing: { enabled: true, endpoint: receiver.url } });
    try {
      assert.equal(channels.answer.hasSubscribers, false, 'with the audit off, nothing holds answers back for tracing');
      const traceId = hex(16);
      const req = modernRequest(1, 'tools/call', { name: 'boom', arguments: {} });
      const res = await post(gw.url, req.body, { ...req.headers, traceparent: `00-${traceId}-${hex(8)}-01` });
      assert.equal(res.json().error.code, -32050, res.text);
      const span = await waitFor('the boom span', () => receiver.spans.find((s) => s.traceId === traceId && s.kind === SPAN_KIND.SERVER));
      assert.equal(attr(span, 'rpc.jsonrpc.error_code'), -32050);
      assert.equal(attr(span, 'rpc.response.status_code'), '-32050');
      assert.equal(span.status?.code, 2, 'an error answer is an error span');
    } finally {
      await gw.close();
      await receiver.close();
      await bad.close();
    }
  });
});
