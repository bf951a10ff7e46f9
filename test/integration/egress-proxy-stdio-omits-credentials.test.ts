// A stdio child that leaves out the proxy credentials it was given must not be judged by another upstream's
// egress rule. Each stdio child gets HTTP_PROXY=http://NAME:TOKEN@… (its own); a request without credentials
// was, with one stdio upstream beside one loopback HTTP upstream (the chart's sidecar plus a stdio
// `extraUpstreams` entry), put down to that HTTP upstream by elimination, on the reasoning that stdio children
// always send theirs. But a child need not: one that dropped the user and password from its HTTP_PROXY (or
// dialled the proxy itself) was judged by the sidecar's rule, looser than its own, and reached what its own
// rule, or the defaults, refuse (seen here: 200 from a loopback address only the sidecar's rule allows).
// Beside a stdio upstream a request without credentials is now nobody's ("unknown": judged by a rule that
// covers every upstream, or the defaults); an HTTP upstream keeps its own rule by authenticating with its
// `egressProxyToken` (the chart gives its sidecar one; egress-proxy-sidecar-attribution.test.ts). Spec:
// GATEWAY-REQUIREMENTS §15 (egress proxy for SSRF, BP26 §Server-Side Request Forgery §Mitigation; a spawned
// server is not trusted, BP26 §Local MCP Server Compromise). README "egress proxy". Real v1 SDK stdio child, real
// v2 SDK server as the HTTP upstream, a real HTTP server as the destination.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startModernServer, type ModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { uncredentialedOwner } from '../../src/policy/egress/proxy.js';

const CHILD = fileURLToPath(new URL('../fixtures/upstreams/uncredentialed-fetcher-stdio.mjs', import.meta.url));
let target: Server;
let targetPort: number;
let hits = 0;
let sidecar: ModernServer;
let gw: TestGateway;

before(async () => {
  target = createServer((_req, res) => {
    hits++;
    res.end('hello from the target');
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  targetPort = (target.address() as AddressInfo).port;
  sidecar = await startModernServer();
  // The chart's shape: the sidecar (HTTP on loopback, no token) and a stdio child beside it.
  gw = await startGateway({
    upstreams: [
      { name: 'server', url: sidecar.url, era: 'modern' },
      { name: 'child', command: ['node', CHILD], env: { TARGET_LOOPBACK: `http://127.0.0.1:${targetPort}/` } },
    ],
    tools: { naming: { prefix: 'never' } },
    policy: {
      // Only the sidecar may reach the loopback target; the child has no rule of its own (the defaults).
      egress: [{ id: 'server-net', tools: ['server/*'], allow: { cidrs: ['127.0.0.1/32'], ports: [targetPort] } }],
      egressProxy: { enabled: true, port: 0 },
    },
  });
});
after(async () => {
  await gw?.close();
  await sidecar?.close();
  target?.close();
});

let n = 0;
async function callTool(name: string, args: Record<string, unknown>) {
  const req = modernRequest(++n, 'tools/call', { name, arguments: args });
  const res = await post(gw.url, req.body, req.headers);
  return res.json().result as { isError?: boolean; content: Array<{ text: string }> };
}

/** A plain-HTTP proxy request without Proxy-Authorization, as a process given no credentials sends it. */
function viaProxy(url: string): Promise<{ status: number; body: string }> {
  const proxy = new URL(gw.gateway.egressProxyUrl!);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: proxy.hostname, port: Number(proxy.port), path: url }, (res) => {
      let body = '';
      res.on('data', (d) => (body += String(d)));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('a stdio child that leaves its credentials out is not judged by the sidecar\'s rule: refused, never reached', async () => {
  const before = hits;
  const res = await callTool('fetch_uncredentialed', { name: 'loopback' });
  assert.equal(res.isError, true, `the child reached the target: ${res.content[0]?.text}`);
  assert.match(res.content[0]!.text, /^error: /);
  assert.equal(hits, before, 'the target was never reached');
  assert.ok(gw.logs.some((l) => l.msg === 'egress proxy refused a connection' && l.upstream === 'unknown' && l.port === targetPort), 'refused as nobody\'s');
  assert.ok(!gw.logs.some((l) => l.msg === 'egress proxy connection' && l.upstream === 'server'), 'never taken for the sidecar');
});

test('so a request without credentials beside a stdio upstream is nobody\'s, judged by the defaults', async () => {
  const res = await viaProxy(`http://127.0.0.1:${targetPort}/`);
  assert.equal(res.status, 403);
  assert.doesNotMatch(res.body, /server-net/);
});

test('attribution by elimination: never beside a stdio upstream; without one, the only loopback HTTP upstream as before', () => {
  const stdio = { name: 'files', command: ['node', 'x.js'] };
  const remote = { name: 'crm', url: 'https://mcp.crm.example.com/mcp' };
  const local = { name: 'server', url: 'http://127.0.0.1:3001/mcp' };
  assert.equal(uncredentialedOwner([stdio, local], true), undefined, 'a stdio child may have left its credentials out');
  assert.equal(uncredentialedOwner([stdio, remote, local], true), undefined);
  assert.equal(uncredentialedOwner([remote, local], true), 'server', 'no stdio child: only the sidecar can be the sender');
  assert.equal(uncredentialedOwner([remote, local], false), undefined, 'a proxy others can reach: either may send');
  assert.equal(uncredentialedOwner([local], true), 'server', 'the only upstream');
  assert.equal(uncredentialedOwner([stdio], true), 'files', 'the only upstream, a stdio one: no other rule to gain');
});
