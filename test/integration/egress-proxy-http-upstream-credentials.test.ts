// Whose connection a request to the egress proxy is, with several HTTP upstreams. Stdio children are given
// credentials naming their upstream (HTTP_PROXY=http://NAME:TOKEN@…); an HTTP upstream is a process
// Gatehouse does not start, so it could send none, and a request without credentials belongs to an HTTP
// upstream only when it is the only one that can reach the proxy. With two sidecar servers on loopback (two
// HTTP upstreams), every request of either was "unknown", judged by a rule covering every upstream or the
// defaults instead of the rules written for it (`tools: [a/*]`): what its rule allowed was refused (403 for a
// loopback address allowed by cidr) and what its rule refused, a public address, went through. An HTTP
// upstream's `egressProxyToken` now names the password it sends as NAME:TOKEN (its operator sets its
// HTTP_PROXY so), and the proxy attributes it as it does a stdio child's; a wrong token is refused 407. An
// upstream with a token sends credentials, so a request without them is never its: the other loopback
// HTTP upstream is then the only one that can be its sender. Real v2 SDK servers as the upstreams, a real
// HTTP server as the destination.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startModernServer, type ModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { uncredentialedOwner } from '../../src/policy/egress/proxy.js';
import { collectSecrets } from '../../src/config/secrets.js';
import { validateConfigObject } from '../../src/config/load.js';

const TOKEN_A = 'a-proxy-token-0123456789abcdef';
let target: Server;
let targetPort: number;
let a: ModernServer;
let b: ModernServer;
let gw: TestGateway;

before(async () => {
  target = createServer((_req, res) => res.end('hello from the target'));
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  targetPort = (target.address() as AddressInfo).port;
  a = await startModernServer();
  b = await startModernServer();
  gw = await startGateway({
    upstreams: [
      { name: 'a', url: a.url, era: 'modern', egressProxyToken: TOKEN_A },
      { name: 'b', url: b.url, era: 'modern' },
    ],
    policy: {
      egress: [
        { id: 'a-net', tools: ['a/*'], allow: { cidrs: ['127.0.0.1/32'], ports: [targetPort] } },
        { id: 'b-net', tools: ['b/*'], allow: { hosts: ['*.b.example'] } },
      ],
      egressProxy: { enabled: true, port: 0 },
    },
  });
});
after(async () => {
  await gw?.close();
  await a?.close();
  await b?.close();
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

test("an HTTP upstream's request with its egressProxyToken is its own, judged by its rule", async () => {
  const res = await viaProxy(`http://127.0.0.1:${targetPort}/`, `a:${TOKEN_A}`);
  assert.deepEqual(res, { status: 200, body: 'hello from the target' });
  assert.ok(gw.logs.some((l) => l.msg === 'egress proxy connection' && l.upstream === 'a' && l.rule === 'a-net'), 'logged as a\'s, under its rule');
  const refused = await viaProxy('http://127.0.0.1:9/', `a:${TOKEN_A}`);
  assert.equal(refused.status, 403);
  assert.match(refused.body, /rule "a-net" does not allow it/);
});

test('a wrong token, or another upstream\'s name with it, is refused 407', async () => {
  assert.equal((await viaProxy(`http://127.0.0.1:${targetPort}/`, 'a:not-the-token-0123456789abcd')).status, 407);
  assert.equal((await viaProxy(`http://127.0.0.1:${targetPort}/`, `b:${TOKEN_A}`)).status, 407);
});

test('a request without credentials is no longer the upstream with a token\'s: it is the other loopback upstream\'s', async () => {
  const res = await viaProxy(`http://127.0.0.1:${targetPort}/`);
  assert.equal(res.status, 403);
  assert.match(res.body, /rule "b-net" does not allow it/);
  assert.ok(gw.logs.some((l) => l.msg === 'egress proxy refused a connection' && l.upstream === 'b' && l.rule === 'b-net'));
});

test('attribution without credentials skips upstreams with a token; the token and its Basic form are log secrets', () => {
  const one = { name: 'a', url: 'http://127.0.0.1:3001/mcp', egressProxyToken: TOKEN_A };
  const other = { name: 'b', url: 'http://127.0.0.1:3002/mcp' };
  assert.equal(uncredentialedOwner([one], true), undefined, 'the only upstream, but it sends credentials');
  assert.equal(uncredentialedOwner([one, other], true), 'b');
  assert.equal(uncredentialedOwner([{ ...other, name: 'c' }, other], true), undefined, 'two without tokens: nobody');
  const config = validateConfigObject({ upstreams: [one, other], auth: { anonymous: true } });
  const secrets = collectSecrets(config);
  for (const s of [TOKEN_A, Buffer.from(`a:${TOKEN_A}`).toString('base64')]) assert.ok(secrets.includes(s), `missing ${s}`);
  assert.throws(() => validateConfigObject({ upstreams: [{ ...one, egressProxyToken: 'short' }], auth: { anonymous: true } }), /egressProxyToken/);
  assert.throws(() => validateConfigObject({ upstreams: [{ name: 's', command: ['node', 'x.js'], egressProxyToken: TOKEN_A }], auth: { anonymous: true } }), /egressProxyToken/, 'a stdio child is given its credentials');
});
