// Tracing against a real trace backend (issue 18 item 3): Jaeger (v2, built from its Go module) receives
// Gatehouse's spans over OTLP/HTTP, and the test reads the trace back through Jaeger's query API.
// JAEGER_BIN names the binary, else the cache `.ci/run` builds it in; without one the test fails (like helm's
// tests), never skips: run `bash .ci/run`, or set JAEGER_BIN.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashKey } from '../../src/auth/key-hash.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { freePort } from '../helpers/auth-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const JAEGER_CACHE = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'gatehouse-jaeger-v1.76.0', 'jaeger');
const JAEGER = process.env.JAEGER_BIN ?? JAEGER_CACHE;
const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';


interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: Array<{ refType: string; traceID: string; spanID: string }>;
  tags: Array<{ key: string; value: unknown }>;
  logs: Array<{ fields: Array<{ key: string; value: unknown }> }>;
}

const tag = (s: { tags: Array<{ key: string; value: unknown }> } | { fields: Array<{ key: string; value: unknown }> }, key: string): unknown =>
  ('tags' in s ? s.tags : s.fields).find((t) => t.key === key)?.value;
const hex = (bytes: number): string => [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');

test('a jaeger binary is at hand (JAEGER_BIN, or the cache .ci/run builds it in)', () => {
  assert.ok(existsSync(JAEGER), `no jaeger at ${JAEGER}: run bash .ci/run (it builds jaeger v1.76.0 with go get -tool), or set JAEGER_BIN`);
});

describe('tracing read back from Jaeger', () => {
  let jaeger: ChildProcess;
  let queryUrl: string;
  let up: CountingUpstream;
  let gw: TestGateway;
  let n = 0;

  before(async () => {
    const [otlpPort, queryPort, grpcPort] = [await freePort(), await freePort(), await freePort()];
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-jaeger-'));
    const config = join(dir, 'jaeger.yaml');
    writeFileSync(config, `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${queryPort}
    grpc:
      endpoint: 127.0.0.1:${grpcPort}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${otlpPort}
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`);
    jaeger = spawn(JAEGER!, ['--config', config], { stdio: ['ignore', 'ignore', process.env.GATEHOUSE_TEST_LOG ? 'inherit' : 'ignore'] });
    queryUrl = `http://127.0.0.1:${queryPort}`;
    // Ready when the query API answers.
    const until = Date.now() + 30_000;
    for (;;) {
      if (jaeger.exitCode !== null) throw new Error(`jaeger exited with ${jaeger.exitCode}`);
      const ok = await fetch(`${queryUrl}/api/services`).then((r) => r.ok, () => false);
      if (ok) break;
      if (Date.now() > until) throw new Error('jaeger did not start in 30 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    up = await startCountingUpstream('modern');
    gw = await startGateway({
      upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
      auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), tenant: 'acme', scopes: [] }] },
      policy: { rateLimits: [{ id: 'one-record', per: 'key', tools: ['up/record'], rate: 1, perSeconds: 3600, burst: 1 }] },
      tracing: { enabled: true, endpoint: `http://127.0.0.1:${otlpPort}/v1/traces`, resourceAttributes: { 'service.name': 'gatehouse-jaeger-test' } },
    });
  });
  after(async () => {
    await gw?.close();
    await up?.close();
    if (jaeger && jaeger.exitCode === null) {
      const exited = new Promise((r) => jaeger.once('exit', r));
      jaeger.kill('SIGTERM');
      await exited;
    }
  });

  async function call(name: string, args: Record<string, unknown>, traceparent?: string) {
    const req = modernRequest(++n, 'tools/call', { name, arguments: args });
    return post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}`, ...(traceparent ? { traceparent } : {}) });
  }

  /** The spans of one trace, once Jaeger has those `complete` asks for. */
  async function trace(traceId: string, complete: (spans: JaegerSpan[]) => boolean): Promise<JaegerSpan[]> {
    const until = Date.now() + 15_000;
    for (;;) {
      const res = await fetch(`${queryUrl}/api/traces/${traceId}`);
      if (res.ok) {
        const body = (await res.json()) as { data?: Array<{ spans: JaegerSpan[] }> };
        const spans = body.data?.[0]?.spans ?? [];
        if (complete(spans)) return spans;
      }
      if (Date.now() > until) throw new Error(`trace ${traceId} did not reach Jaeger whole`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  test("a call: parent is the client's span, the upstream received the CLIENT span's context, attributes present", async () => {
    const traceId = hex(16);
    const clientSpan = hex(8);
    const res = await call('lookup', { item: 'jaeger' }, `00-${traceId}-${clientSpan}-01`);
    assert.equal(res.status, 200);
    const spans = await trace(traceId, (all) => all.some((s) => tag(s, 'span.kind') === 'server') && all.some((s) => tag(s, 'span.kind') === 'client'));
    const server = spans.find((s) => s.operationName === 'tools/call lookup' && tag(s, 'span.kind') === 'server');
    assert.ok(server, `spans: ${spans.map((s) => s.operationName).join(', ')}`);
    assert.deepEqual(server.references.map((r) => [r.refType, r.traceID, r.spanID]), [['CHILD_OF', traceId, clientSpan]]);
    assert.equal(tag(server, 'span.kind'), 'server');
    assert.equal(tag(server, 'mcp.method.name'), 'tools/call');
    assert.equal(tag(server, 'gen_ai.tool.name'), 'lookup');
    assert.equal(tag(server, 'gatehouse.tool_ref'), 'up/lookup');
    assert.equal(tag(server, 'gatehouse.upstream'), 'up');
    assert.equal(tag(server, 'enduser.id'), 'key:alice');
    assert.equal(tag(server, 'gatehouse.tenant'), 'acme');
    assert.equal(tag(server, 'gatehouse.outcome'), 'ok');
    // The upstream request is Gatehouse's CLIENT span, child of the SERVER span (whose parent is the client's span).
    const upstream = spans.find((s) => tag(s, 'span.kind') === 'client');
    assert.ok(upstream, `spans: ${spans.map((s) => s.operationName).join(', ')}`);
    assert.deepEqual(upstream.references.map((r) => [r.refType, r.traceID, r.spanID]), [['CHILD_OF', traceId, server.spanID]]);
    assert.equal(tag(upstream, 'gatehouse.upstream'), 'up');
    assert.equal(tag(upstream, 'mcp.method.name'), 'tools/call');
    // The upstream received the CLIENT span's context: its span id, the same trace id; not the client's own.
    assert.ok(up.received.some((b) => b.includes(`00-${traceId}-${upstream.spanID}-01`)), 'the upstream got the CLIENT span context');
    assert.ok(!up.received.some((b) => b.includes(clientSpan)), "the client's own span id did not reach the upstream");
    // The audit append, a wait on the store, is a child span of the call.
    const audit = spans.find((s) => s.operationName === 'audit store.append');
    assert.ok(audit, `spans: ${spans.map((s) => s.operationName).join(', ')}`);
    assert.equal(audit.references[0]?.spanID, server.spanID);
  });

  test('a refused call carries its refusal code', async () => {
    await call('record', { item: 'first' });
    const traceId = hex(16);
    const clientSpan = hex(8);
    const refused = await call('record', { item: 'second' }, `00-${traceId}-${clientSpan}-01`);
    assert.equal(refused.json().result.structuredContent.error.code, 'rate_limited');
    const spans = await trace(traceId, (all) => all.some((s) => tag(s, 'span.kind') === 'server' && s.operationName === 'tools/call record') && all.some((s) => s.operationName === 'rateLimit store.take'));
    const span = spans.find((s) => tag(s, 'span.kind') === 'server');
    assert.equal(span!.operationName, 'tools/call record');
    assert.equal(span!.references[0]?.spanID, clientSpan);
    assert.equal(tag(span!, 'gatehouse.refusal_code'), 'rate_limited');
    assert.equal(tag(span!, 'gatehouse.outcome'), 'refused');
    assert.equal(tag(span!, 'otel.status_code'), 'ERROR');
    assert.ok(span!.logs.some((l) => tag(l, 'event') === 'gatehouse.refusal' && tag(l, 'gatehouse.refusal_code') === 'rate_limited'));
    // Where its time went: the rate limit's wait on the store, a child span; nothing went upstream.
    assert.equal(spans.find((s) => s.operationName === 'rateLimit store.take')!.references[0]?.spanID, span!.spanID);
    assert.ok(!spans.some((s) => tag(s, 'span.kind') === 'client'));
  });
});
