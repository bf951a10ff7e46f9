// How the egress proxy reads Proxy-Authorization: Basic (RFC 7617 §2): base64 of user-id ":" password, where
// the user-id holds no colon and the password may. The proxy split the decoded text at every colon and kept
// the first two parts, so an HTTP upstream whose `egressProxyToken` has a colon in it (the schema allows any
// character) was refused 407 on every request however right its credentials, and its connections never went
// out. And the token was compared with timingSafeEqual after checking only the string lengths: a password
// of the same length in characters but not in UTF-8 bytes (a non-ASCII character) made it throw, so anyone
// who reaches the proxy got 502 and an error logged for each such request instead of the 407 a wrong
// password gets. The password is now everything after the first colon, and the lengths compared are the
// bytes'. Real v2 SDK server as the HTTP upstream, a real HTTP server as the destination. README "egress
// proxy"; GATEWAY-REQUIREMENTS §15 (egress proxy, BP26 §Server-Side Request Forgery §Mitigation).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startModernServer, type ModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const TOKEN = 'colon:in-the-proxy-token:0123456789';
const PLAIN = 'plain-proxy-token-0123456789';
let target: Server;
let targetPort: number;
let upstream: ModernServer;
let other: ModernServer;
let gw: TestGateway;

before(async () => {
  target = createServer((_req, res) => res.end('hello from the target'));
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  targetPort = (target.address() as AddressInfo).port;
  upstream = await startModernServer();
  other = await startModernServer();
  gw = await startGateway({
    upstreams: [
      { name: 'a', url: upstream.url, era: 'modern', egressProxyToken: TOKEN },
      { name: 'b', url: other.url, era: 'modern', egressProxyToken: PLAIN },
    ],
    policy: {
      egress: [{ id: 'a-net', tools: ['a/*'], allow: { cidrs: ['127.0.0.1/32'], ports: [targetPort] } }],
      egressProxy: { enabled: true, port: 0 },
    },
  });
});
after(async () => {
  await gw?.close();
  await upstream?.close();
  await other?.close();
  target?.close();
});

/** A plain-HTTP proxy request with `credentials` (user:password) as its Basic credentials. */
function viaProxy(credentials: string): Promise<{ status: number; body: string }> {
  const proxy = new URL(gw.gateway.egressProxyUrl!);
  const headers = { 'proxy-authorization': `Basic ${Buffer.from(credentials).toString('base64')}` };
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: proxy.hostname, port: Number(proxy.port), path: `http://127.0.0.1:${targetPort}/`, headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += String(d)));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The status line a CONNECT with `credentials` gets. */
function connectWith(credentials: string): Promise<string> {
  const proxy = new URL(gw.gateway.egressProxyUrl!);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(proxy.port), proxy.hostname);
    let got = '';
    socket.on('data', (d) => {
      got += String(d);
      if (got.includes('\r\n')) {
        socket.destroy();
        resolve(got.split('\r\n')[0]!);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(got.split('\r\n')[0] ?? ''));
    socket.write(`CONNECT 127.0.0.1:${targetPort} HTTP/1.1\r\nhost: 127.0.0.1:${targetPort}\r\nproxy-authorization: Basic ${Buffer.from(credentials).toString('base64')}\r\n\r\n`);
  });
}

test('a token with colons in it authenticates (RFC 7617 §2: the password is all after the first colon)', async () => {
  assert.deepEqual(await viaProxy(`a:${TOKEN}`), { status: 200, body: 'hello from the target' });
  assert.equal(await connectWith(`a:${TOKEN}`), 'HTTP/1.1 200 Connection Established');
  // Its first part alone is not the token.
  assert.equal((await viaProxy('a:colon')).status, 407);
  assert.equal((await viaProxy(`a:${TOKEN}:more`)).status, 407);
});

test('a password as long in characters but not in bytes is a wrong password: 407, nothing logged as failed', async () => {
  const sameLength = `é${PLAIN.slice(1)}`;
  assert.equal(sameLength.length, PLAIN.length);
  assert.equal((await viaProxy(`b:${sameLength}`)).status, 407);
  assert.equal(await connectWith(`b:${sameLength}`), 'HTTP/1.1 407 Proxy Authentication Required');
  assert.ok(!gw.logs.some((l) => l.msg === 'egress proxy request failed' || l.msg === 'egress proxy tunnel failed'), 'no request failed');
});
