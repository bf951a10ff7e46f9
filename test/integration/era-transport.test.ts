// Transport rules that depend on the era (2026-07-28/basic/transports/streamable-http.mdx §Earlier
// Streamable HTTP Revisions; GATEWAY-REQUIREMENTS §1 [C]: never send GET, DELETE, Mcp-Session-Id or
// Last-Event-ID to a modern upstream) and the Host/Origin guard in front of everything.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';

const handler = (_req: unknown, res: import('node:http').ServerResponse, body: string): void => {
  // A legacy client's initialize is issued a session; nothing else is.
  if (body) jsonResult(res, body, {}, body.includes('"initialize"') ? { 'mcp-session-id': 'live' } : {});
  else res.writeHead(405).end();
};
const up = await startFakeUpstream(handler);
const modernUp = await startFakeUpstream(handler, { handshake: 'modern' });
const auto = await startGateway({ upstreams: [{ name: 'auto', url: up.url }] });
const modernOnly = await startGateway({ upstreams: [{ name: 'modern', url: modernUp.url, era: 'modern' }] });
after(async () => {
  await auto.close();
  await modernOnly.close();
  await up.close();
  await modernUp.close();
});


test('GET and DELETE from a modern client → 405 with Allow: POST, nothing forwarded', async () => {
  const before = up.requests.length;
  for (const method of ['GET', 'DELETE'] as const) {
    const res = await request(auto.url, { method, headers: { 'mcp-protocol-version': '2026-07-28', accept: 'text/event-stream', 'mcp-session-id': 's' } });
    assert.equal(res.statusCode, 405);
    assert.equal(res.headers.allow, 'POST');
    assert.equal(((await res.body.json()) as { error: { code: number } }).error.code, -32600);
  }
  assert.equal(up.requests.length, before);
});

test('a modern upstream never sees GET: a legacy client GET is held by the gateway; a legacy upstream gets it forwarded', async () => {
  const before = modernUp.requests.length;
  const held = await request(modernOnly.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': 's' } });
  assert.equal(held.statusCode, 404, 'the bridge knows no such session');
  await held.body.dump();
  assert.equal(modernUp.requests.length, before);
  const session = await legacySession(auto.url);
  const beforeLegacy = up.requests.length;
  const forwarded = await request(auto.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } });
  await forwarded.body.dump();
  assert.equal(up.requests.length, beforeLegacy + 1);
  assert.equal(up.requests.at(-1)!.method, 'GET');
});

// Mcp-Method, Mcp-Name and Mcp-Param-* are checked against the body on modern requests only; on a legacy
// request they were relayed as the client wrote them, so a proxy behind Gatehouse routing by them could be
// told `ping` about a tools/call.
test('a legacy POST reaches a legacy upstream without the client\'s Mcp-Method, Mcp-Name or Mcp-Param-* headers', async () => {
  const session = await legacySession(auto.url);
  const res = await post(auto.url, rpc(7, 'tools/call', { name: 'delete_all', arguments: {} }), {
    ...LEGACY_HEADERS,
    'mcp-session-id': session,
    'mcp-method': 'ping',
    'mcp-name': 'harmless',
    'mcp-param-region': 'eu',
  });
  assert.equal(res.status, 200);
  const seen = up.requests.at(-1)!;
  assert.match(seen.body, /"delete_all"/);
  assert.equal(seen.headers['mcp-method'], undefined);
  assert.equal(seen.headers['mcp-name'], undefined);
  assert.equal(seen.headers['mcp-param-region'], undefined);
  assert.equal(seen.headers['mcp-session-id'], 'live', 'the session header still goes');
});

test('a modern POST reaches the upstream without Mcp-Session-Id or Last-Event-ID; a legacy POST keeps them', async () => {
  const modern = modernRequest(1, 'tools/list');
  await post(modernOnly.url, modern.body, { ...modern.headers, 'mcp-session-id': 'stale', 'last-event-id': 'ev-1' });
  const modernSeen = modernUp.requests.at(-1)!.headers;
  assert.equal(modernSeen['mcp-session-id'], undefined);
  assert.equal(modernSeen['last-event-id'], undefined);
  assert.equal(modernSeen['mcp-method'], 'tools/list');
  const session = await legacySession(auto.url);
  await post(auto.url, rpc(2, 'tools/list'), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', 'last-event-id': 'ev-2' });
  const legacySeen = up.requests.at(-1)!.headers;
  assert.equal(legacySeen['mcp-session-id'], 'live');
  assert.equal(legacySeen['last-event-id'], 'ev-2');
});

test('/readyz probes with a POST, never a GET (a modern upstream must not see GET)', async () => {
  const before = modernUp.requests.length;
  const res = await request(`${modernOnly.origin}/readyz`);
  assert.equal(res.statusCode, 200);
  await res.body.dump();
  const probe = modernUp.requests.slice(before);
  assert.equal(probe.length, 1);
  assert.equal(probe[0]!.method, 'POST');
  assert.equal(probe[0]!.headers['mcp-method'], 'server/discover');
});

test('a foreign Origin or Host → 403 before the body is read or anything forwarded', async () => {
  const before = up.requests.length;
  const badOrigin = await post(auto.url, rpc(1, 'tools/list'), { ...LEGACY_HEADERS, origin: 'http://evil.example' });
  assert.equal(badOrigin.status, 403);
  assert.match(badOrigin.json().error.message, /Origin "http:\/\/evil\.example" is not allowed/);
  const badHost = await post(auto.url, rpc(1, 'tools/list'), { ...LEGACY_HEADERS, host: 'rebound.evil.example' });
  assert.equal(badHost.status, 403);
  assert.equal(up.requests.length, before);
});

// An origin is scheme, host and port: until 5 December a page of any other web app on this machine
// (http://localhost:6274, http://127.0.0.1:9999) passed, because only the host was compared.
test('an Origin on another port of the gateway\'s host → 403; its own host:port (http or https) and a listed origin pass', async () => {
  const port = Number(new URL(auto.url).port);
  const before = up.requests.length;
  for (const origin of ['http://localhost:6274', `http://127.0.0.1:${port === 9999 ? 9998 : 9999}`, 'http://127.0.0.1']) {
    const other = await post(auto.url, rpc(1, 'tools/list'), { ...LEGACY_HEADERS, origin });
    assert.equal(other.status, 403, origin);
    assert.equal(other.json().error.message, `Forbidden: Origin "${origin}" is not allowed`);
  }
  assert.equal(up.requests.length, before, 'nothing forwarded for a foreign origin');
  // In a session: the upstream issues session ids, so one is required from now on (session-required.test.ts).
  const session = await legacySession(auto.url);
  for (const origin of [auto.origin, `https://127.0.0.1:${port}`, `http://localhost:${port}`]) {
    assert.equal((await post(auto.url, rpc(1, 'tools/list'), { ...LEGACY_HEADERS, 'mcp-session-id': session, origin })).status, 200, origin);
  }
  const inspector = await startGateway({ upstreams: [{ name: 'auto', url: up.url }], listen: { allowedOrigins: ['http://localhost:6274'] } });
  try {
    assert.equal((await post(inspector.url, rpc(1, 'tools/list'), { ...LEGACY_HEADERS, origin: 'http://localhost:6274' })).status, 200);
    assert.equal((await post(inspector.url, rpc(1, 'tools/list'), { ...LEGACY_HEADERS, origin: 'http://localhost:6275' })).status, 403);
  } finally {
    await inspector.close();
  }
});
