// The request line names the trace a call belongs to (README §Logs): the client's trace id when it sent a
// traceparent (2026-07-28/basic/index.mdx §OpenTelemetry trace context), and with tracing on and no
// client context, the trace of the SERVER span Gatehouse started itself, so a line leads to its span.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { hex, SPAN_KIND, startReceiver, waitFor, type Receiver } from '../helpers/otlp.js';

describe('the request line carries the trace id of the span Gatehouse made', () => {
  let up: CountingUpstream;
  let receiver: Receiver;
  let gw: TestGateway;
  let n = 0;
  before(async () => {
    up = await startCountingUpstream('modern');
    receiver = await startReceiver();
    gw = await startGateway({
      upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
      tracing: { enabled: true, endpoint: receiver.url },
    });
  });
  after(async () => {
    await gw.close();
    await up.close();
    await receiver.close();
  });

  async function call(headers: Record<string, string> = {}): Promise<{ callId: string }> {
    const req = modernRequest(++n, 'tools/call', { name: 'lookup', arguments: { item: `t${n}` } });
    const res = await post(gw.url, req.body, { ...req.headers, ...headers });
    assert.equal(res.status, 200, res.text);
    return { callId: String(res.headers['x-gatehouse-call-id']) };
  }

  const requestLine = (callId: string) => waitFor(`the request line of ${callId}`, () => gw.logs.find((l) => l.msg === 'request' && l.callId === callId));

  test('no client traceparent: the line carries the trace id of the root span Gatehouse started', async () => {
    const { callId } = await call();
    const span = await waitFor('the call span', () => receiver.spans.find((s) => s.kind === SPAN_KIND.SERVER && s.attributes.some((a) => a.key === 'gatehouse.call_id' && a.value.stringValue === callId)));
    assert.ok(!span.parentSpanId, 'a root span');
    const line = await requestLine(callId);
    assert.equal(line.traceId, span.traceId);
  });

  test('a client traceparent: the line still carries the client trace id', async () => {
    const traceId = hex(16);
    const { callId } = await call({ traceparent: `00-${traceId}-${hex(8)}-01` });
    const line = await requestLine(callId);
    assert.equal(line.traceId, traceId);
  });
});

describe('tracing off', () => {
  test('without a client traceparent the line has no traceId', async () => {
    const up = await startCountingUpstream('modern');
    const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }] });
    try {
      const req = modernRequest(1, 'tools/call', { name: 'lookup', arguments: { item: 'x' } });
      const res = await post(gw.url, req.body, req.headers);
      assert.equal(res.status, 200);
      const line = await waitFor('the request line', () => gw.logs.find((l) => l.msg === 'request'));
      assert.equal(line.traceId, undefined);
    } finally {
      await gw.close();
      await up.close();
    }
  });
});
