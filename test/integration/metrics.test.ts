// Prometheus metrics on their own listener (issue 6 item 1): requests by method/era/upstream/outcome,
// tool calls by catalog name with refusal codes, latency histograms with sub-millisecond buckets,
// upstream up/era, sessions, in-flight, reloads and auth failures. The exposition is checked with the real
// `promtool check metrics`, and a real Prometheus scrapes a running Gatehouse; the test reads a counter
// back through Prometheus's HTTP API.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { freePort } from '../helpers/auth-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';

const KEY = 'gh_metrics_key_0123456789abcdefghijklmnopq';
const AUTH = { authorization: `Bearer ${KEY}` };
let upstream: FakeUpstream;
let gw: TestGateway;

before(async () => {
  upstream = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string } };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const result =
      msg.method === 'tools/list'
        ? { tools: [{ name: 'add', inputSchema: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] } }], resultType: 'complete', ttlMs: 60_000 }
        : msg.method === 'tools/call'
          ? { content: [{ type: 'text', text: 'ok' }], resultType: 'complete' }
          : { resultType: 'complete' };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  }, { handshake: 'modern' });
  gw = await startGateway({
    upstreams: [{ name: 'calc', url: upstream.url }],
    auth: { apiKeys: [{ id: 'm', hash: hashKey(KEY), scopes: [] }] },
    metrics: { enabled: true, port: 0 },
  });
});

after(async () => {
  await gw?.close();
  await upstream?.close();
});

async function scrape(): Promise<string> {
  const res = await request(gw.gateway.metricsUrl!);
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  return res.body.text();
}

/** The value of one series, by its exact label set as printed by prom-client. */
function valueOf(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function callTool(name: string, args: Record<string, unknown>): Promise<void> {
  const req = modernRequest(1, 'tools/call', { name, arguments: args });
  const res = await post(gw.url, req.body, { ...req.headers, ...AUTH });
  assert.equal(res.status, 200, res.text);
}

describe('metrics endpoint', () => {
  before(async () => {
    const list = modernRequest(1, 'tools/list');
    assert.equal((await post(gw.url, list.body, { ...list.headers, ...AUTH })).status, 200);
    await callTool('add', { a: 1 });
    await callTool('add', { a: 2 });
    await callTool('add', { a: 'not a number' }); // refused by the gateway's argument check
    await callTool('made_up_tool_name_1234', {}); // not in the catalog: counted as "other"
    await post(gw.url, rpc(1, 'initialize', {}), LEGACY_HEADERS); // no credentials: an auth failure
  });

  test('is on its own listener, not on the MCP port', async () => {
    assert.notEqual(new URL(gw.gateway.metricsUrl!).port, new URL(gw.url).port);
    const onPublic = await request(`${gw.origin}/metrics`);
    assert.equal(onPublic.statusCode, 404);
    await onPublic.body.dump();
  });

  test('counts requests and tool calls with bounded labels', async () => {
    const text = await scrape();
    assert.equal(valueOf(text, 'gatehouse_requests_total{method="tools/call",era="modern",upstream="calc",outcome="ok"}'), 3);
    assert.equal(valueOf(text, 'gatehouse_requests_total{method="tools/call",era="modern",upstream="calc",outcome="refused"}'), 1);
    assert.equal(valueOf(text, 'gatehouse_tool_calls_total{tool="add",outcome="ok",error_code=""}'), 2);
    assert.equal(valueOf(text, 'gatehouse_tool_calls_total{tool="add",outcome="refused",error_code="invalid_arguments"}'), 1);
    assert.equal(valueOf(text, 'gatehouse_tool_calls_total{tool="other",outcome="ok",error_code=""}'), 1);
    assert.ok(!text.includes('made_up_tool_name_1234'), 'a name the catalog does not know never becomes a label value');
    assert.equal(valueOf(text, 'gatehouse_auth_failures_total{reason="missing_credentials"}'), 1);
  });

  test('has latency histograms with sub-millisecond buckets, upstream state, and process metrics', async () => {
    const text = await scrape();
    assert.ok(valueOf(text, 'gatehouse_request_duration_seconds_count{method="tools/call"}')! >= 4);
    assert.notEqual(valueOf(text, 'gatehouse_request_duration_seconds_bucket{le="0.0001",method="tools/call"}'), undefined);
    assert.ok(valueOf(text, 'gatehouse_upstream_request_duration_seconds_count{upstream="calc"}')! >= 1);
    assert.equal(valueOf(text, 'gatehouse_upstream_up{upstream="calc"}'), 1);
    assert.equal(valueOf(text, 'gatehouse_upstream_info{upstream="calc",era="modern"}'), 1);
    assert.equal(valueOf(text, 'gatehouse_in_flight_requests'), 0);
    assert.notEqual(valueOf(text, 'gatehouse_legacy_sessions'), undefined);
    assert.match(text, /^process_cpu_seconds_total /m);
    assert.match(text, /^process_resident_memory_bytes /m);
  });

  test('counts config reloads by result', async () => {
    await gw.gateway.reload({ ...(await import('../../src/config/load.js')).validateConfigObject({ upstreams: [{ name: 'calc', url: upstream.url }], auth: { apiKeys: [{ id: 'm', hash: hashKey(KEY), scopes: [] }] }, metrics: { enabled: true, port: 0 } }, 'test') });
    const text = await scrape();
    assert.equal(valueOf(text, 'gatehouse_config_reloads_total{result="applied"}'), 1);
  });

  test('passes promtool check metrics', async () => {
    const text = await scrape();
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
    assert.equal(check.error, undefined, 'promtool must be installed (the prometheus package)');
    assert.equal(check.status, 0, `${check.stdout}\n${check.stderr}`);
    assert.equal(`${check.stdout}${check.stderr}`.trim(), '', 'no lint findings');
  });
});

describe('metrics through the catalog', () => {
  test('an argument refusal made by the catalog is counted as refused, under the public name', async () => {
    const second = await startFakeUpstream((_req, res, body) => {
      const msg = JSON.parse(body) as { id?: unknown; method: string };
      if (msg.id === undefined) return void res.writeHead(202).end();
      const result = msg.method === 'tools/list' ? { tools: [], resultType: 'complete', ttlMs: 60_000 } : { resultType: 'complete' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    }, { handshake: 'modern' });
    const catalog = await startGateway({ upstreams: [{ name: 'calc', url: upstream.url }, { name: 'other', url: second.url }], metrics: { enabled: true, port: 0 } });
    try {
      const list = modernRequest(1, 'tools/list');
      assert.equal((await post(catalog.url, list.body, list.headers)).status, 200);
      const bad = modernRequest(2, 'tools/call', { name: 'calc_add', arguments: { a: 'x' } });
      assert.equal((await post(catalog.url, bad.body, bad.headers)).json().result.structuredContent.error.code, 'invalid_arguments');
      const text = await (await request(catalog.gateway.metricsUrl!)).body.text();
      assert.equal(valueOf(text, 'gatehouse_tool_calls_total{tool="calc_add",outcome="refused",error_code="invalid_arguments"}'), 1);
      assert.equal(valueOf(text, 'gatehouse_requests_total{method="tools/call",era="modern",upstream="calc",outcome="refused"}'), 1);
    } finally {
      await catalog.close();
      await second.close();
    }
  });
});

describe('upstream latency beyond the HTTP pass-through', () => {
  test('a stdio upstream (shared child, bridged) feeds the upstream latency histogram too', async () => {
    const fake = new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url).pathname;
    const stdio = await startGateway({ upstreams: [{ name: 'kid', command: [process.execPath, fake], era: 'legacy' }], metrics: { enabled: true, port: 0 } });
    try {
      const init = await post(stdio.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'm', version: '1' } }));
      const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
      assert.equal((await post(stdio.url, rpc(2, 'tools/call', { name: 'echo' }), headers)).status, 200);
      const text = await (await request(stdio.gateway.metricsUrl!)).body.text();
      assert.ok((valueOf(text, 'gatehouse_upstream_request_duration_seconds_count{upstream="kid"}') ?? 0) >= 1, text.split('\n').filter((l) => l.includes('upstream_request')).join('\n'));
    } finally {
      await stdio.close();
    }
  });
});

describe('a real Prometheus scrapes Gatehouse', () => {
  let prometheus: ChildProcess | undefined;
  after(() => {
    if (prometheus?.pid !== undefined && prometheus.exitCode === null) prometheus.kill('SIGTERM');
  });

  test('a counter made by calls is read back through the Prometheus HTTP API', async () => {
    const target = new URL(gw.gateway.metricsUrl!);
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-prom-'));
    writeFileSync(join(dir, 'prometheus.yml'), `global: { scrape_interval: 1s, evaluation_interval: 1s }\nscrape_configs:\n  - job_name: gatehouse\n    metrics_path: ${target.pathname}\n    static_configs: [{ targets: ["${target.host}"] }]\n`);
    const port = await freePort();
    prometheus = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    prometheus.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
    const spawnError = await new Promise<Error | undefined>((r) => {
      prometheus!.once('error', r);
      setTimeout(() => r(undefined), 500);
    });
    assert.equal(spawnError, undefined, 'prometheus must be installed (apt-get install prometheus)');
    for (let i = 0; i < 3; i++) await callTool('add', { a: i });
    const expected = valueOf(await scrape(), 'gatehouse_tool_calls_total{tool="add",outcome="ok",error_code=""}');
    const query = encodeURIComponent('gatehouse_tool_calls_total{tool="add",outcome="ok",job="gatehouse"}');
    let seen: string | undefined;
    const deadline = Date.now() + 45_000;
    while (Date.now() < deadline && seen !== String(expected)) {
      await new Promise((r) => setTimeout(r, 500));
      try {
        const res = await request(`http://127.0.0.1:${port}/api/v1/query?query=${query}`);
        const body = (await res.body.json()) as { data?: { result?: Array<{ value: [number, string] }> } };
        seen = body.data?.result?.[0]?.value[1];
      } catch {
        // Prometheus is still starting
      }
    }
    assert.equal(seen, String(expected), `Prometheus reported ${seen}; its log:\n${stderr}`);
  });
});
