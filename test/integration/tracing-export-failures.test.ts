// A span export that fails (the OTLP endpoint answers 500, or nothing listens there) is counted in the
// metrics and warned about at most once a minute, naming the endpoint by origin and path only. Found by a
// reading hunt: until then the BatchSpanProcessor handed the error to OpenTelemetry's global error handler,
// a no-op without a diag logger, so tracing could be broken for good without a log line or a metric.
// Spans the batch processor drops because its queue is full (a collector that is slow, not failing) went
// the same silent way, and are counted and warned about too (`reason="queue_full"`).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const WARNING = 'tracing: spans could not be exported and were dropped';

let up: CountingUpstream;
let failing: Server;
let failingPort: number;
let exportsSeen = 0;

before(async () => {
  up = await startCountingUpstream('modern');
  // A collector that refuses every export.
  failing = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      exportsSeen++;
      res.writeHead(500, { 'content-type': 'text/plain' }).end('collector broken');
    });
  });
  await new Promise<void>((r) => failing.listen(0, '127.0.0.1', r));
  failingPort = (failing.address() as AddressInfo).port;
});
after(async () => {
  await up?.close();
  await new Promise<void>((r) => {
    failing?.closeAllConnections();
    failing?.close(() => r());
  });
});

async function scrape(gw: TestGateway): Promise<string> {
  const res = await request(gw.gateway.metricsUrl!);
  assert.equal(res.statusCode, 200);
  return res.body.text();
}

function counter(text: string, name: string): number {
  const m = new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

async function call(gw: TestGateway, id: number): Promise<void> {
  const req = modernRequest(id, 'tools/call', { name: 'echo', arguments: {} });
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(res.status, 200, res.text.slice(0, 300));
}

async function failuresReach(gw: TestGateway, n: number, ms: number): Promise<string> {
  const until = Date.now() + ms;
  for (;;) {
    const text = await scrape(gw);
    if (counter(text, 'gatehouse_trace_export_failures_total') >= n) return text;
    if (Date.now() > until) throw new Error(`timed out waiting for ${n} failed exports; last scrape: ${counter(text, 'gatehouse_trace_export_failures_total')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('exports the collector refuses are counted in /metrics and warned about once, without the credentials', async () => {
  const gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    metrics: { enabled: true, port: 0 },
    tracing: { enabled: true, endpoint: `http://trace-user:url-pass-secret@127.0.0.1:${failingPort}/v1/traces?api_key=query-secret`, headers: { authorization: 'Bearer header-secret-value' } },
  });
  try {
    // Before any failure the series is there, at 0: an alert can be written on it.
    const first = await scrape(gw);
    assert.match(first, /^gatehouse_trace_export_failures_total 0$/m);
    assert.match(first, /^gatehouse_trace_spans_dropped_total\{reason="export_failed"\} 0$/m);
    assert.match(first, /^gatehouse_trace_spans_dropped_total\{reason="queue_full"\} 0$/m);
    await call(gw, 1);
    await failuresReach(gw, 1, 10_000);
    // A second batch fails too: counted again, but not warned about again within the minute.
    await call(gw, 2);
    const text = await failuresReach(gw, 2, 10_000);
    assert.ok(exportsSeen >= 2, `the collector saw ${exportsSeen} exports`);
    assert.ok(counter(text, 'gatehouse_trace_spans_dropped_total{reason="export_failed"}') >= 2, text.split('\n').filter((l) => l.includes('trace')).join('\n'));
    const warnings = gw.logs.filter((l) => l.msg === WARNING);
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    const w = warnings[0]!;
    assert.equal(w.level, 'warn');
    assert.equal(w.endpoint, `http://127.0.0.1:${failingPort}/v1/traces`);
    assert.equal(w.status, 500);
    assert.equal(w.failedExports, 1);
    const all = gw.logs.map((l) => JSON.stringify(l)).join('\n');
    for (const secret of ['url-pass-secret', 'trace-user', 'query-secret', 'header-secret-value', 'collector broken']) assert.ok(!all.includes(secret), `${secret} in the log`);
  } finally {
    await gw.close();
  }
});

test('exports to an endpoint where nothing listens are counted and warned about', async () => {
  // A port that was free a moment ago: connections are refused.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const closedPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    metrics: { enabled: true, port: 0 },
    tracing: { enabled: true, endpoint: `http://127.0.0.1:${closedPort}/v1/traces` },
  });
  try {
    await call(gw, 1);
    // The exporter retries a refused connection until its 5 s timeout.
    await failuresReach(gw, 1, 15_000);
    const warnings = gw.logs.filter((l) => l.msg === WARNING);
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.equal(warnings[0]!.endpoint, `http://127.0.0.1:${closedPort}/v1/traces`);
  } finally {
    await gw.close();
  }
});

test('spans dropped because the export queue is full (a collector that does not answer) are counted and warned about', async () => {
  // A collector that takes each export and never answers: the batch processor waits for it (up to its 5 s
  // export timeout) while finished spans fill its queue of 2,048, and the rest are dropped. Until this was
  // counted, OpenTelemetry said so only to its diag logger, a no-op: no metric, no log line.
  const held: import('node:http').ServerResponse[] = [];
  const stalling = createServer((req, res) => {
    req.resume();
    held.push(res);
  });
  await new Promise<void>((r) => stalling.listen(0, '127.0.0.1', r));
  const stallingPort = (stalling.address() as AddressInfo).port;
  const gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    metrics: { enabled: true, port: 0 },
    tracing: { enabled: true, endpoint: `http://127.0.0.1:${stallingPort}/v1/traces` },
  });
  try {
    // Each call ends at least two sampled spans (SERVER, CLIENT): 2,400 calls are well past the 2,048 the
    // queue holds besides the 512 of the batch in flight. Bounded: 16 workers, 150 calls each.
    let next = 1;
    const worker = async (): Promise<void> => {
      for (let i = 0; i < 150; i++) await call(gw, next++);
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    const text = await scrape(gw);
    const dropped = counter(text, 'gatehouse_trace_spans_dropped_total{reason="queue_full"}');
    assert.ok(dropped > 0, text.split('\n').filter((l) => l.includes('trace')).join('\n'));
    const warnings = gw.logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('tracing: spans were dropped because the export queue is full'));
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.equal(warnings[0]!.level, 'warn');
    assert.equal(warnings[0]!.queueSize, 2048);
    assert.ok(typeof warnings[0]!.droppedSpans === 'number' && warnings[0]!.droppedSpans >= 1);
  } finally {
    for (const res of held) res.destroy();
    stalling.closeAllConnections();
    await gw.close();
    await new Promise<void>((r) => stalling.close(() => r()));
  }
});
