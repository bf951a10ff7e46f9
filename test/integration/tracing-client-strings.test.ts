// Strings a client chooses (the tool name, the JSON-RPC id) reach the span name and attributes: they are cut
// there, so one request cannot put a megabyte into a span, which the export queue (2048 spans) would hold,
// and a batch the collector then refuses for its size. Found by a reading hunt: until then a 100 KB tool
// name was exported whole, twice per span (name and gen_ai.tool.name), and a 1 MB body could make 2048
// queued spans hold 2 GB.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { attr, hex, SPAN_KIND, startReceiver, waitFor, type Receiver } from '../helpers/otlp.js';

let up: CountingUpstream;
let receiver: Receiver;
let gw: TestGateway;

before(async () => {
  up = await startCountingUpstream('modern');
  receiver = await startReceiver();
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], tracing: { enabled: true, endpoint: receiver.url } });
});
after(async () => {
  await gw?.close();
  await up?.close();
  await receiver?.close();
});

/** The spans of one call's trace, once both its server and its client span have been exported. */
function callSpans(traceId: string) {
  return waitFor('the call span', () => {
    const mine = receiver.spans.filter((s) => s.traceId === traceId);
    return mine.some((s) => s.kind === SPAN_KIND.SERVER) && mine.some((s) => s.kind === SPAN_KIND.CLIENT) ? mine : undefined;
  });
}

/** The longest string a span may carry from a client, with room for the method and an ellipsis. */
const BOUND = 300;

test("an 8 KB tool name and a 100 KB request id are cut in the span's name and attributes", async () => {
  const traceId = hex(16);
  // The name also travels in the Mcp-Name header, which Node bounds at 16 KB.
  const name = `t${'x'.repeat(8_000)}`;
  const req = modernRequest(1, 'tools/call', { name, arguments: {} });
  const body = req.body.replace('"id":1', `"id":"${'i'.repeat(100_000)}"`);
  assert.notEqual(body, req.body);
  const res = await post(gw.url, body, { ...req.headers, traceparent: `00-${traceId}-${hex(8)}-01` });
  assert.equal(res.status, 200, res.text.slice(0, 300));
  const spans = await callSpans(traceId);
  for (const span of spans) {
    assert.ok(span.name.length <= BOUND, `span name of ${span.name.length} characters`);
    // A name no list gave is no span name (tracing-span-names.test.ts): the method alone; the attribute carries it, cut.
    if (span.kind !== SPAN_KIND.INTERNAL) {
      assert.equal(span.name, 'tools/call');
      assert.ok(String(attr(span, 'gen_ai.tool.name')).startsWith('txxx'), span.name.slice(0, 40));
    }
    for (const a of span.attributes) {
      const v = a.value.stringValue;
      if (v !== undefined) assert.ok(v.length <= BOUND, `${a.key} of ${v.length} characters`);
    }
  }
});

// The same strings are scrubbed of credential-shaped text, as the request log scrubs them: a span goes to a
// trace backend that more people read than the gateway's log. Found by a reading hunt: until then a bearer
// token in the tool name or a Gatehouse key in the JSON-RPC id reached the exported span as sent.
test('a bearer token in the tool name and a gh_ key in the request id do not reach the exported spans', async () => {
  const traceId = hex(16);
  const bearer = 'tracingBearerSecret0123456789';
  const key = 'gh_TracingKeySecret0123456789abcdef';
  const req = modernRequest(1, 'tools/call', { name: `lookup Bearer ${bearer}`, arguments: {} });
  const body = req.body.replace('"id":1', `"id":"call ${key}"`);
  assert.notEqual(body, req.body);
  const res = await post(gw.url, body, { ...req.headers, traceparent: `00-${traceId}-${hex(8)}-01` });
  assert.equal(res.status, 200, res.text.slice(0, 300));
  const spans = await callSpans(traceId);
  const text = JSON.stringify(spans);
  assert.ok(!text.includes(bearer), `the bearer token is in a span: ${text.slice(Math.max(0, text.indexOf(bearer) - 300), text.indexOf(bearer) + 50)}`);
  assert.ok(!text.includes('TracingKeySecret'), 'the gh_ key is in a span');
  const server = spans.find((s) => s.kind === SPAN_KIND.SERVER)!;
  // What is left is still readable: the words around the credential, and where it was.
  assert.equal(server.name, 'tools/call', 'a name no list gave is no span name (tracing-span-names.test.ts)');
  assert.equal(attr(server, 'gen_ai.tool.name'), 'lookup Bearer [redacted]');
  assert.equal(attr(server, 'jsonrpc.request.id'), 'call [redacted]');
});
