// A modern client's subscriptions/listen in front of a legacy upstream is served from the session's GET stream
// (GATEWAY-REQUIREMENTS §16.1 "Subscriptions ⇄ GET stream"), and acknowledged with the part of its filter the
// upstream declared it can honour (2026-07-28 basic/patterns/subscriptions.mdx §Acknowledgment). When that is
// nothing (no listChanged, no resources.subscribe), nothing can come on the GET stream for it; until 5 December
// the listen held that stream open anyway, a pooled connection upstream for as long as the client stayed. Now
// no GET is opened for it, and the session's end, which that GET used to tell, is noticed otherwise: a stdio
// child's exit by the transport (stdio-listen-exit.test.ts), an HTTP session the server forgot by a ping every
// 20 s answered 404 (2025-11-25/basic/transports.mdx §Session Management 3). The listen then ends with its
// result (subscriptions.mdx §Graceful Closure), and its client listens again on a new session.
// The upstream is a fake: it must forget a session on purpose.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startModernServer } from '../fixtures/upstreams/modern-server.js';
import { startRedeployFront } from '../helpers/redeploy-front.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest } from '../helpers/http.js';
import { readSseUntil } from '../helpers/sse.js';

test('a listen acknowledged with nothing to hear opens no GET stream upstream, and still ends when the server forgets the session', { timeout: 60_000 }, async () => {
  let gets = 0;
  /** Each ping on the session, and the status it was answered with. */
  const pings: Array<{ session: string; status: number }> = [];
  const forgotten = new Set<string>();
  let sessions = 0;
  const up = await startFakeUpstream((req, res, body) => {
    const session = req.headers['mcp-session-id'];
    const ping = body.includes('"method":"ping"');
    if (typeof session === 'string' && forgotten.has(session)) {
      if (ping) pings.push({ session, status: 404 });
      return void res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
    }
    if (ping) pings.push({ session: String(session), status: 200 });
    if (req.method === 'GET') {
      gets++;
      return void res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': open\n\n');
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    // Tools with no listChanged: nothing a listen could hear.
    const result = msg.method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'quiet', version: '1' } } : {};
    res.writeHead(200, { 'content-type': 'application/json', ...(msg.method === 'initialize' ? { 'mcp-session-id': `s-${++sessions}` } : {}) }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  });
  const gw = await startGateway({ upstreams: [{ name: 'quiet', url: up.url }] });
  const ac = new AbortController();
  try {
    const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
    assert.equal(res.statusCode, 200);
    const messages: Array<Record<string, any>> = [];
    const done = readSseUntil(res.body, (m) => (messages.splice(0, messages.length, ...m), m.some((x) => x.id === 1)), 40_000);
    const deadline = Date.now() + 5_000;
    while (messages.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(messages[0]?.method, 'notifications/subscriptions/acknowledged');
    assert.deepEqual(messages[0]?.params?.notifications, {}, 'acknowledged with nothing to hear');
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(gets, 0, 'no GET stream was opened upstream for a listen that can hear nothing');
    // The server forgets the session: the next ping (within 20 s) is answered 404, and the listen ends.
    assert.equal(pings.length, 0, 'no ping yet: the session is forgotten before the first one');
    for (let n = 1; n <= sessions; n++) forgotten.add(`s-${n}`);
    const all = await done;
    assert.equal(all.find((m) => m.id === 1)?.result?.resultType, 'complete', `the listen ended with its result: ${JSON.stringify(all)}`);
    // What ended it: the first ping, answered 404, and nothing after it (no second interval, no other timer).
    assert.deepEqual(pings.map((p) => p.status), [404], `the one ping there was told it: ${JSON.stringify(pings)}`);
    assert.ok(gw.logs.some((l) => l.msg === 'upstream session gone; its listens end'), JSON.stringify(gw.logs));
    assert.equal(gets, 0, 'and no GET meanwhile');
  } finally {
    ac.abort();
    await gw.close();
    await up.close();
  }
});

// The same listen when the server is upgraded in place to a 2026-07-28 one (the v2 SDK): its GET stream would
// have been answered 405, which ended the listens (bridge-upgraded-upstream.test.ts); the ping is answered
// -32022 instead, which ends them too, and the session is DELETEd there (it may still be held).
test('a listen with nothing to hear ends when the upstream is upgraded in place to a 2026-07-28 server', { timeout: 60_000 }, async () => {
  let gets = 0;
  const legacy = await startFakeUpstream((req, res, body) => {
    if (req.method === 'GET') {
      gets++;
      return void res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': open\n\n');
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const result = msg.method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'quiet', version: '1' } } : {};
    res.writeHead(200, { 'content-type': 'application/json', ...(msg.method === 'initialize' ? { 'mcp-session-id': 's-1' } : {}) }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  });
  const modern = await startModernServer();
  const front = await startRedeployFront(legacy.url);
  const gw = await startGateway({ upstreams: [{ name: 'app', url: front.url }] });
  const ac = new AbortController();
  try {
    const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const res = await request(gw.url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
    assert.equal(res.statusCode, 200);
    let seen: Array<Record<string, any>> = [];
    const done = readSseUntil(res.body, (m) => ((seen = m), m.some((x) => x.id === 1)), 40_000);
    const deadline = Date.now() + 5_000;
    while (seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(seen[0]?.params?.notifications, {}, 'acknowledged with nothing to hear');
    front.switchTo(modern.url);
    front.dropConnections();
    const all = await done;
    assert.equal(all.find((m) => m.id === 1)?.result?.resultType, 'complete', `the listen ended with its result: ${JSON.stringify(all)}`);
    assert.equal(gets, 0, 'no GET stream was opened for it');
    const upgraded = modern.requests.filter((r) => (r.body as { method?: string } | undefined)?.method === 'ping');
    assert.ok(upgraded.length >= 1, 'a ping reached the upgraded server');
    assert.ok(await waitFor(() => modern.requests.some((r) => r.method === 'DELETE' && r.headers['mcp-session-id'] === 's-1'), 6_000), 'the session was DELETEd, best effort');
  } finally {
    ac.abort();
    await gw.close();
    await front.close();
    await modern.close();
    await legacy.close();
  }
});

async function waitFor(cond: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return cond();
}
