// A span's name is what trace backends index and group by (Jaeger's list of operations, Tempo's span
// metrics, an APM's resources), so it must be low-cardinality: the OpenTelemetry semantic conventions for
// MCP name a span `{mcp.method.name} {target}`, the target being the tool or prompt name, and "if there is
// no low-cardinality target available, the span name SHOULD be `{mcp.method.name}`" (gen-ai/mcp.md §Spans).
// A tool name the client chose that no list gave (a pass-through upstream is sent any name; a catalog
// refuses it as unknown) is no such target: every made-up name became a span name of its own, so any
// client could grow a backend's operations without bound, as the metrics do not let it (they count such a
// name as `other`). Such a call's SERVER and CLIENT spans are now named after the method alone; the name is
// still in `gen_ai.tool.name`, cut and scrubbed. A listed tool's spans keep `tools/call <name>`.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { attr, hex, SPAN_KIND, startReceiver, waitFor, type Receiver } from '../helpers/otlp.js';

let up: CountingUpstream;
let receiver: Receiver;
let single: TestGateway;
let catalog: TestGateway;

before(async () => {
  up = await startCountingUpstream('modern');
  receiver = await startReceiver();
  // One upstream: the pass-through, which sends a name no list gave on to the upstream.
  single = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], tracing: { enabled: true, endpoint: receiver.url } });
  // Two: the catalog, which refuses such a name as unknown.
  catalog = await startGateway({ upstreams: [{ name: 'a', url: up.url, era: 'modern' }, { name: 'b', url: up.url, era: 'modern' }], tracing: { enabled: true, endpoint: receiver.url } });
});
after(async () => {
  await single?.close();
  await catalog?.close();
  await up?.close();
  await receiver?.close();
});

async function traced(gw: TestGateway, name: string): Promise<string> {
  const traceId = hex(16);
  const req = modernRequest(1, 'tools/call', { name, arguments: { item: 'x' } });
  const res = await post(gw.url, req.body, { ...req.headers, traceparent: `00-${traceId}-${hex(8)}-01` });
  assert.ok(res.status === 200 || res.status === 400, res.text.slice(0, 300));
  return traceId;
}

const spanOf = (traceId: string, kind: number) => waitFor(`the ${kind === SPAN_KIND.SERVER ? 'SERVER' : 'CLIENT'} span`, () => receiver.spans.find((s) => s.traceId === traceId && s.kind === kind));

test('pass-through: a listed tool names its spans; a name no list gave leaves them named after the method', async () => {
  const listed = await traced(single, 'lookup');
  assert.equal((await spanOf(listed, SPAN_KIND.SERVER)).name, 'tools/call lookup');
  assert.equal((await spanOf(listed, SPAN_KIND.CLIENT)).name, 'tools/call lookup');

  const madeUp = `made_up_${hex(6)}`;
  const unlisted = await traced(single, madeUp);
  const server = await spanOf(unlisted, SPAN_KIND.SERVER);
  const client = await spanOf(unlisted, SPAN_KIND.CLIENT);
  assert.equal(server.name, 'tools/call');
  assert.equal(client.name, 'tools/call');
  // The name the client used is still on the span, as an attribute.
  assert.equal(attr(server, 'gen_ai.tool.name'), madeUp);
  assert.equal(attr(client, 'gen_ai.tool.name'), madeUp);
});

test('catalog: a name refused as unknown leaves the span named after the method', async () => {
  const madeUp = `made_up_${hex(6)}`;
  const traceId = await traced(catalog, madeUp);
  const server = await spanOf(traceId, SPAN_KIND.SERVER);
  assert.equal(attr(server, 'gatehouse.refusal_code'), 'unknown_tool');
  assert.equal(server.name, 'tools/call');
  assert.equal(attr(server, 'gen_ai.tool.name'), madeUp);
  // A listed one, under its public (prefixed) name, keeps it.
  const listed = await traced(catalog, 'a_lookup');
  const span = await spanOf(listed, SPAN_KIND.SERVER);
  assert.equal(attr(span, 'gatehouse.outcome'), 'ok', JSON.stringify(span.attributes));
  assert.equal(span.name, 'tools/call a_lookup');
});

test('a method Gatehouse does not know names its span `other`; the method is still in mcp.method.name', async () => {
  // The client chooses it, as many as it likes (this one is answered -32601, 404).
  const method = `x/made_up_${hex(6)}`;
  const req = modernRequest(1, method, {});
  const res = await post(single.url, req.body, req.headers);
  assert.ok(res.status < 500, res.text.slice(0, 300));
  const server = await waitFor('the span of the made-up method', () => receiver.spans.find((s) => s.kind === SPAN_KIND.SERVER && attr(s, 'mcp.method.name') === method));
  assert.equal(server.name, 'other');
  // A known one keeps its name (tools/list, with no target).
  const listTrace = hex(16);
  const list = modernRequest(2, 'tools/list', {});
  assert.equal((await post(single.url, list.body, { ...list.headers, traceparent: `00-${listTrace}-${hex(8)}-01` })).status, 200);
  assert.equal((await spanOf(listTrace, SPAN_KIND.SERVER)).name, 'tools/list');
});
