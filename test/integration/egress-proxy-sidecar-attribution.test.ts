// The egress proxy learns whose connection it is from the proxy credentials each stdio child is given; a
// request without credentials comes from a process that was given none: the MCP server container of the
// chart's sidecar mode, which is an HTTP upstream. Until 5 December such a request belonged to an upstream
// only when there was exactly one: with the chart's `extraUpstreams` (a stdio server beside the sidecar) the
// sidecar's connections were "unknown", judged by the defaults or a rule covering every upstream instead of
// the rules written for the sidecar upstream (`tools: [server/*]`), in both directions: what its rule allowed
// was refused (403 for a loopback address its rule allows by cidr) and what its rule refused, a public
// address the defaults allow, went through. That was first mended by giving such a request to the only
// loopback HTTP upstream, which let a stdio child that left its own credentials out pose as the sidecar
// (egress-proxy-stdio-omits-credentials.test.ts). Now beside a stdio upstream a request without credentials
// stays nobody's, and the sidecar keeps its own rule by sending its `egressProxyToken` (the chart sets its
// HTTP_PROXY to http://NAME:TOKEN@127.0.0.1:<port>); without a stdio upstream, the only loopback HTTP upstream
// is still the sender. README "egress proxy". Real v2 SDK server as the sidecar, a real stdio server beside it.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startModernServer, type ModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { uncredentialedOwner } from '../../src/policy/egress/proxy.js';

const FETCHER = fileURLToPath(new URL('../fixtures/upstreams/fetcher-stdio.mjs', import.meta.url));
let target: Server;
let sidecar: ModernServer;
let gw: TestGateway;
const TOKEN = 'sidecar-proxy-token-0123456789abcdef';

before(async () => {
  target = createServer((_req, res) => res.end('hello from the target'));
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  sidecar = await startModernServer();
  gw = await startGateway({
    upstreams: [
      { name: 'server', url: sidecar.url, era: 'modern', egressProxyToken: TOKEN },
      { name: 'fetcher', command: ['node', FETCHER] },
    ],
    policy: {
      egress: [{ id: 'server-net', tools: ['server/*'], allow: { cidrs: ['127.0.0.1/32'], ports: [(target.address() as AddressInfo).port] } }],
      egressProxy: { enabled: true, port: 0 },
    },
  });
});
after(async () => {
  await gw?.close();
  await sidecar?.close();
  target?.close();
});

/** A plain-HTTP proxy request, with `user:password` as its Basic credentials when given. */
function viaProxy(url: string, credentials?: string): Promise<{ status: number; body: string }> {
  const proxy = new URL(gw.gateway.egressProxyUrl!);
  const headers = credentials !== undefined ? { 'proxy-authorization': `Basic ${Buffer.from(credentials).toString('base64')}` } : {};
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: proxy.hostname, port: Number(proxy.port), path: url, headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += String(d)));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test("the sidecar's request with its egressProxyToken is its own beside a stdio upstream, judged by its rule", async () => {
  const res = await viaProxy(`http://127.0.0.1:${(target.address() as AddressInfo).port}/`, `server:${TOKEN}`);
  assert.deepEqual(res, { status: 200, body: 'hello from the target' });
  assert.ok(gw.logs.some((l) => l.msg === 'egress proxy connection' && l.upstream === 'server' && l.rule === 'server-net'), 'logged as the sidecar upstream\'s, under its rule');
});

test('and what its rule does not allow is refused under that rule', async () => {
  const res = await viaProxy('http://127.0.0.1:9/', `server:${TOKEN}`);
  assert.equal(res.status, 403);
  assert.match(res.body, /rule "server-net" does not allow it/);
});

test('a request without credentials beside a stdio upstream is nobody\'s: the sidecar\'s rule does not apply to it', async () => {
  const res = await viaProxy(`http://127.0.0.1:${(target.address() as AddressInfo).port}/`);
  assert.equal(res.status, 403);
  assert.doesNotMatch(res.body, /server-net/);
  assert.ok(gw.logs.some((l) => l.msg === 'egress proxy refused a connection' && l.upstream === 'unknown'));
});

test('a remote HTTP upstream cannot be the sender on a loopback proxy; with two candidates, or a stdio upstream, nobody is', () => {
  const stdio = { name: 'files', command: ['node', 'x.js'] };
  const remote = { name: 'crm', url: 'https://mcp.crm.example.com/mcp' };
  const local = { name: 'server', url: 'http://127.0.0.1:3001/mcp' };
  assert.equal(uncredentialedOwner([remote, local], true), 'server');
  assert.equal(uncredentialedOwner([remote, local], false), undefined, 'a proxy others can reach: either may send');
  assert.equal(uncredentialedOwner([{ ...local, name: 'other' }, local], true), undefined);
  assert.equal(uncredentialedOwner([stdio, remote, local], true), undefined, 'a stdio child may have left its credentials out');
  assert.equal(uncredentialedOwner([stdio], true), 'files', 'the only upstream, as before');
});
