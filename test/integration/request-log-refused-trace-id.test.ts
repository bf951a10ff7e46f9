// A request refused at the door (Host/Origin, a repeated header, a body too large, bad JSON, a batch
// message the door refuses) or by auth (401, the failed-auth limit's 429) names its trace in its `request`
// line as a call's line does (README §Logs; 2026-07-28/basic/index.mdx §OpenTelemetry trace context): the
// client's trace id from its traceparent header, else, with tracing on, the trace of the SERVER span
// Gatehouse starts for it. Until 5 December such lines had no traceId at all: their span was made when they
// ended, after the line, in a trace of its own even when the client sent one.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hashKey } from '../../src/auth/key-hash.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';
import { attr, hex, SPAN_KIND, startReceiver, waitFor, type Receiver } from '../helpers/otlp.js';

const KEY = 'gh_refused_trace_key_0123456789abcdefghij';
const AUTHED = { authorization: `Bearer ${KEY}` };

let up: CountingUpstream;
before(async () => {
  up = await startCountingUpstream('modern');
});
after(async () => {
  await up.close();
});

/** A client's trace context: its traceparent header and the ids it names. */
function clientTrace(): { traceId: string; spanId: string; header: { traceparent: string } } {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, header: { traceparent: `00-${traceId}-${spanId}-01` } };
}

function callIdOf(res: { headers: Record<string, unknown> }): string {
  const id = res.headers['x-gatehouse-call-id'];
  assert.equal(typeof id, 'string', 'the refusal names its call');
  return id as string;
}

describe('tracing on', () => {
  let receiver: Receiver;
  let gw: TestGateway;
  before(async () => {
    receiver = await startReceiver();
    gw = await startGateway({
      upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
      listen: { maxBodyBytes: 4096 },
      auth: { apiKeys: [{ id: 'k', hash: hashKey(KEY), scopes: [] }], failureLimit: { attempts: 1, windowSeconds: 86_400 } },
      tracing: { enabled: true, endpoint: receiver.url },
    });
  });
  after(async () => {
    await gw.close();
    await receiver.close();
  });

  const requestLine = (callId: string) => waitFor(`the request line of ${callId}`, () => gw.logs.find((l) => l.msg === 'request' && l.callId === callId));
  const serverSpan = (callId: string) => waitFor(`the span of ${callId}`, () => receiver.spans.find((s) => s.kind === SPAN_KIND.SERVER && attr(s, 'gatehouse.call_id') === callId));

  /** The line names the client's trace, and the refused request's span is a child of the client's span. */
  async function assertClientTrace(res: { status: number; headers: Record<string, unknown>; text: string }, status: number, refusal: string, trace: ReturnType<typeof clientTrace>): Promise<void> {
    assert.equal(res.status, status, res.text);
    const callId = callIdOf(res);
    const line = await requestLine(callId);
    assert.equal(line.refusal, refusal);
    assert.equal(line.traceId, trace.traceId);
    const refusedLine = gw.logs.find((l) => (l.msg === 'request refused' || l.msg === 'request refused by auth') && l.callId === callId);
    assert.equal(refusedLine?.traceId, trace.traceId, 'the refusal line names it too');
    const span = await serverSpan(callId);
    assert.equal(span.traceId, trace.traceId);
    assert.equal(span.parentSpanId, trace.spanId);
    assert.ok(span.events?.some((ev) => ev.name === 'gatehouse.refusal' && attr(ev, 'gatehouse.refusal_code') === refusal), 'the span has the refusal event');
  }

  test('Origin refused (403): the client trace', async () => {
    const trace = clientTrace();
    const req = modernRequest(1, 'tools/list');
    await assertClientTrace(await post(gw.url, req.body, { ...req.headers, ...AUTHED, origin: 'http://rebound.example', ...trace.header }), 403, 'host_origin', trace);
  });

  test('a repeated singleton header (400): the client trace', async () => {
    const trace = clientTrace();
    const req = modernRequest(2, 'tools/list');
    await assertClientTrace(await post(gw.url, req.body, { ...req.headers, ...AUTHED, 'mcp-method': ['tools/list', 'tools/call'], ...trace.header }), 400, 'repeated_header', trace);
  });

  test('a body too large (413): the client trace', async () => {
    const trace = clientTrace();
    const req = modernRequest(3, 'tools/call', { name: 'lookup', arguments: { item: 'x'.repeat(8192) } });
    await assertClientTrace(await post(gw.url, req.body, { ...req.headers, ...AUTHED, ...trace.header }), 413, 'body_too_large', trace);
  });

  test('a body that is no JSON (400): the client trace', async () => {
    const trace = clientTrace();
    await assertClientTrace(await post(gw.url, '{"jsonrpc":"2.0",', { ...LEGACY_HEADERS, ...AUTHED, ...trace.header }), 400, 'parse_error', trace);
  });

  test('a batch message the door refuses: the client trace', async () => {
    const trace = clientTrace();
    const batch = `[${rpc('b1', 'initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '0' } })},${rpc('b2', 'ping')}]`;
    const res = await post(gw.url, batch, { ...LEGACY_HEADERS, ...AUTHED, 'mcp-protocol-version': '2025-03-26', ...trace.header });
    const line = await waitFor('the refused batch message', () => gw.logs.find((l) => l.msg === 'request' && l.refusal === 'batch'));
    assert.equal(line.traceId, trace.traceId, `${res.status} ${res.text}`);
    const span = await serverSpan(String(line.callId));
    assert.equal(span.traceId, trace.traceId);
  });

  test('no credential (401) and no client trace: the trace of the span Gatehouse started', async () => {
    const req = modernRequest(4, 'tools/list');
    const res = await post(gw.url, req.body, req.headers);
    assert.equal(res.status, 401, res.text);
    const callId = callIdOf(res);
    const span = await serverSpan(callId);
    assert.ok(!span.parentSpanId, 'a root span');
    assert.equal(span.name, 'POST', 'named when it ended, as before: refused before its method was read');
    const line = await requestLine(callId);
    assert.equal(line.refusal, 'missing_credentials');
    assert.equal(line.traceId, span.traceId);
  });

  // Last: the failed-auth limit then holds for 127.0.0.1 for the rest of this gateway's life.
  test('the failed-auth limit (429): the client trace', async () => {
    const wrong = modernRequest(5, 'tools/list');
    assert.equal((await post(gw.url, wrong.body, { ...wrong.headers, authorization: 'Bearer gh_not_the_key_0123456789abcdefghijklmn' })).status, 401);
    const trace = clientTrace();
    const req = modernRequest(6, 'tools/list');
    await assertClientTrace(await post(gw.url, req.body, { ...req.headers, ...AUTHED, ...trace.header }), 429, 'auth_failure_limit', trace);
  });
});

describe('tracing off', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }] });
  });
  after(async () => {
    await gw.close();
  });

  test('a refused request names the client trace, and none without one', async () => {
    const trace = clientTrace();
    const req = modernRequest(1, 'tools/list');
    const traced = await post(gw.url, req.body, { ...req.headers, origin: 'http://rebound.example', ...trace.header });
    const untraced = await post(gw.url, req.body, { ...req.headers, origin: 'http://rebound.example' });
    assert.equal(traced.status, 403);
    assert.equal(untraced.status, 403);
    const line = (callId: string) => waitFor(`the request line of ${callId}`, () => gw.logs.find((l) => l.msg === 'request' && l.callId === callId));
    assert.equal((await line(callIdOf(traced))).traceId, trace.traceId);
    assert.equal((await line(callIdOf(untraced))).traceId, undefined);
  });

  test('an invalid traceparent names no trace', async () => {
    const req = modernRequest(2, 'tools/list');
    const res = await post(gw.url, req.body, { ...req.headers, origin: 'http://rebound.example', traceparent: `00-${'0'.repeat(32)}-${hex(8)}-01` });
    assert.equal(res.status, 403);
    const line = await waitFor('the request line', () => gw.logs.find((l) => l.msg === 'request' && l.callId === callIdOf(res)));
    assert.equal(line.traceId, undefined);
  });
});

// A client's sampled flag is followed for callers Gatehouse knows; believed before authentication, anyone
// could have every request of a flood of refused ones recorded and exported, past `sampleRatio`.
describe('tracing on with sampleRatio 0', () => {
  let receiver: Receiver;
  let gw: TestGateway;
  before(async () => {
    receiver = await startReceiver();
    gw = await startGateway({
      upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
      auth: { apiKeys: [{ id: 'k', hash: hashKey(KEY), scopes: [] }] },
      tracing: { enabled: true, endpoint: receiver.url, sampleRatio: 0 },
    });
  });
  after(async () => {
    await gw.close();
    await receiver.close();
  });

  test("a request refused before auth is not recorded on the client's sampled flag; an authenticated call is", async () => {
    const refusedTrace = clientTrace();
    const req = modernRequest(1, 'tools/list');
    const refused = await post(gw.url, req.body, { ...req.headers, origin: 'http://rebound.example', ...refusedTrace.header });
    assert.equal(refused.status, 403);
    const unauthenticated = clientTrace();
    assert.equal((await post(gw.url, req.body, { ...req.headers, ...unauthenticated.header })).status, 401);
    // The request line still names the client's trace.
    const line = await waitFor('the request line', () => gw.logs.find((l) => l.msg === 'request' && l.callId === callIdOf(refused)));
    assert.equal(line.traceId, refusedTrace.traceId);
    const admittedTrace = clientTrace();
    const call = modernRequest(2, 'tools/call', { name: 'lookup', arguments: { item: 'sampled' } });
    assert.equal((await post(gw.url, call.body, { ...call.headers, ...AUTHED, ...admittedTrace.header })).status, 200);
    // Spans are exported in the order they ended: once the later call's span is in, the refused ones would be.
    await waitFor('the admitted call\'s span', () => receiver.spans.find((s) => s.traceId === admittedTrace.traceId));
    assert.deepEqual(receiver.spans.filter((s) => s.traceId === refusedTrace.traceId || s.traceId === unauthenticated.traceId), []);
  });
});
