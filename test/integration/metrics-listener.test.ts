// The metrics listener's own door: on a loopback interface (the default, 127.0.0.1) only loopback Host
// names are served, as the MCP endpoint and /readyz do; the series name the upstreams, tools and policy
// entries, which a web page that rebound a name to 127.0.0.1 must not read. Found by a reading hunt: until
// then /metrics answered any Host.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';

let upstream: FakeUpstream;
let gw: TestGateway;

before(async () => {
  upstream = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const result = msg.method === 'tools/list' ? { tools: [], resultType: 'complete' } : { resultType: 'complete' };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  }, { handshake: 'modern' });
  gw = await startGateway({ upstreams: [{ name: 'calc', url: upstream.url }], metrics: { enabled: true, port: 0 } });
});

after(async () => {
  await gw?.close();
  await upstream?.close();
});

async function scrapeAs(host: string, origin?: string): Promise<{ status: number; text: string }> {
  const res = await request(gw.gateway.metricsUrl!, { headers: { host, ...(origin !== undefined ? { origin } : {}) } });
  return { status: res.statusCode, text: await res.body.text() };
}

test('a loopback metrics listener serves loopback Host names, and refuses another (DNS rebinding) with 403 and no series', async () => {
  const port = new URL(gw.gateway.metricsUrl!).port;
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost']) {
    const res = await scrapeAs(host);
    assert.equal(res.status, 200, host);
    assert.match(res.text, /gatehouse_upstream_up\{upstream="calc"\}/, host);
  }
  for (const [host, origin] of [[`rebound.example:${port}`, undefined], ['rebound.example', 'http://rebound.example'], [`127.0.0.1:${port}`, 'http://rebound.example']] as const) {
    const res = await scrapeAs(host, origin);
    assert.equal(res.status, 403, `${host} ${origin ?? ''}`);
    assert.doesNotMatch(res.text, /gatehouse_/, `${host}: no series in the refusal`);
  }
});

test('the metrics path answers another method 405 with Allow: GET, HEAD; HEAD gets the headers only; other paths 404', async () => {
  // Found by a reading hunt: a POST to /metrics was answered 404 "Metrics are at /metrics".
  for (const method of ['POST', 'PUT', 'DELETE'] as const) {
    const res = await request(gw.gateway.metricsUrl!, { method, body: method === 'DELETE' ? null : 'x' });
    assert.equal(res.statusCode, 405, method);
    assert.equal(res.headers.allow, 'GET, HEAD', method);
    await res.body.dump();
  }
  const head = await request(gw.gateway.metricsUrl!, { method: 'HEAD' });
  assert.equal(head.statusCode, 200);
  assert.equal(await head.body.text(), '');
  const other = await request(new URL('/elsewhere', gw.gateway.metricsUrl!).href);
  assert.equal(other.statusCode, 404);
  await other.body.dump();
});
