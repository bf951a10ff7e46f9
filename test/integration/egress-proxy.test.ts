// The egress proxy (issue 13 item 2): argument checks cannot see a URL a server builds from its own input,
// so the upstream's outbound connections go through a proxy on loopback that applies the same rules. A
// real stdio server (v1 SDK) fetches two URLs it builds from its environment, through HTTP_PROXY (undici's
// EnvHttpProxyAgent, so a CONNECT tunnel): the one an egress rule allows arrives, the other is refused
// with 403. Plain-HTTP forwarding and the credentials check are exercised directly.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const FETCHER = fileURLToPath(new URL('../fixtures/upstreams/fetcher-stdio.mjs', import.meta.url));
let allowed: Server;
let denied: Server;
const hits = { allowed: 0, denied: 0 };
/** The headers of the last request each target received. */
const seen: Record<string, Record<string, unknown>> = {};
let gw: TestGateway;

async function target(name: 'allowed' | 'denied'): Promise<Server> {
  const s = createServer((req, res) => {
    hits[name]++;
    seen[name] = req.headers;
    // A header for the proxy's hop alone, named in Connection: the client must not get it.
    if (req.url === '/hop') res.setHeader('connection', 'keep-alive, x-hop-answer').setHeader('x-hop-answer', 'for the proxy').setHeader('x-end-answer', 'for the client');
    res.end(`hello from the ${name} target`);
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return s;
}
const portOf = (s: Server) => (s.address() as AddressInfo).port;

before(async () => {
  allowed = await target('allowed');
  denied = await target('denied');
  gw = await startGateway({
    upstreams: [{ name: 'fetcher', command: ['node', FETCHER], env: { TARGET_ALLOWED: `http://127.0.0.1:${portOf(allowed)}/`, TARGET_DENIED: `http://127.0.0.1:${portOf(denied)}/` } }],
    metrics: { enabled: true, port: 0 },
    policy: {
      egress: [{ id: 'fetcher-net', tools: ['fetcher/*'], allow: { cidrs: ['127.0.0.1/32'], ports: [portOf(allowed)] } }],
      egressProxy: { enabled: true, port: 0 },
    },
  });
});
after(async () => {
  await gw.close();
  allowed.close();
  denied.close();
});

let n = 0;
async function callTool(name: string, args: Record<string, unknown>) {
  const req = modernRequest(++n, 'tools/call', { name, arguments: args });
  const res = await post(gw.url, req.body, req.headers);
  return res.json().result as { isError?: boolean; content: Array<{ text: string }> };
}

test('a stdio child gets HTTP_PROXY with its own credentials, and NO_PROXY emptied', async () => {
  const env = JSON.parse((await callTool('proxy_env', {})).content[0]!.text) as { HTTP_PROXY: string; NO_PROXY: string };
  const proxy = new URL(env.HTTP_PROXY);
  assert.equal(`${proxy.protocol}//${proxy.host}`, gw.gateway.egressProxyUrl);
  assert.equal(proxy.username, 'fetcher');
  assert.ok(proxy.password.length >= 20);
  assert.equal(env.NO_PROXY, '');
});

test('the server fetches the allowed target through the proxy; the denied one is refused with 403 and never reached', async () => {
  const ok = await callTool('fetch_named', { name: 'allowed' });
  assert.equal(ok.content[0]!.text, '200 hello from the allowed target');
  const refused = await callTool('fetch_named', { name: 'denied' });
  assert.equal(refused.isError, true);
  // undici reports a refused CONNECT as a cancelled request; what matters is that it failed and never arrived.
  assert.match(refused.content[0]!.text, /^error: /);
  assert.deepEqual(hits, { allowed: 1, denied: 0 });
  const metrics = await (await request(gw.gateway.metricsUrl!)).body.text();
  assert.match(metrics, /^gatehouse_egress_proxy_requests_total\{upstream="fetcher",verdict="allowed"\} 1$/m);
  assert.match(metrics, /^gatehouse_egress_proxy_requests_total\{upstream="fetcher",verdict="blocked"\} 1$/m);
  assert.ok(gw.logs.some((l) => l.msg === 'egress proxy refused a connection' && l.upstream === 'fetcher' && l.rule === 'fetcher-net' && l.port === portOf(denied)));
});

/** One plain-HTTP proxy request (absolute form), with optional Proxy-Authorization. */
function viaProxy(url: string, auth?: string, extra: Record<string, string> = {}): Promise<{ status: number; body: string; headers?: Record<string, unknown> }> {
  const proxy = new URL(gw.gateway.egressProxyUrl!);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: proxy.hostname, port: Number(proxy.port), path: url, headers: { ...extra, ...(auth ? { 'proxy-authorization': auth } : {}) } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += String(d)));
      res.on('end', () => resolve(extra.connection === undefined ? { status: res.statusCode ?? 0, body } : { status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('plain HTTP is forwarded or refused the same way; requests without credentials belong to the only upstream; bad credentials get 407', async () => {
  const before = { ...hits };
  const ok = await viaProxy(`http://127.0.0.1:${portOf(allowed)}/plain`);
  assert.deepEqual(ok, { status: 200, body: 'hello from the allowed target' });
  const blocked = await viaProxy(`http://127.0.0.1:${portOf(denied)}/plain`);
  assert.equal(blocked.status, 403);
  assert.match(blocked.body, /blocked by the gateway's egress policy: rule "fetcher-net" does not allow it/);
  const metadata = await viaProxy('http://169.254.169.254/latest/meta-data/');
  assert.equal(metadata.status, 403);
  const forged = await viaProxy(`http://127.0.0.1:${portOf(allowed)}/`, `Basic ${Buffer.from('fetcher:not-the-token').toString('base64')}`);
  assert.equal(forged.status, 407);
  // A user name whose percent-encoding is broken is bad credentials too; it threw, an unhandled rejection
  // that ended the gateway (the test process here).
  const broken = await viaProxy(`http://127.0.0.1:${portOf(allowed)}/`, `Basic ${Buffer.from('fetch%E0%A4%A:token').toString('base64')}`);
  assert.equal(broken.status, 407);
  assert.deepEqual(hits, { allowed: before.allowed + 1, denied: before.denied });
});

test('headers named in Connection stay on their hop, both ways (RFC 9110 §7.6.1); the rest are forwarded', async () => {
  const res = await viaProxy(`http://127.0.0.1:${portOf(allowed)}/hop`, undefined, { connection: 'keep-alive, X-Hop-Request', 'x-hop-request': 'for the proxy', 'x-end-request': 'for the target' });
  assert.equal(res.status, 200);
  assert.equal(seen.allowed?.['x-hop-request'], undefined, 'the target did not get the client hop header');
  assert.equal(seen.allowed?.['x-end-request'], 'for the target');
  assert.equal(res.headers?.['x-hop-answer'], undefined, 'the client did not get the target hop header');
  assert.equal(res.headers?.['x-end-answer'], 'for the client');
});
