// A modern subscriptions/listen in front of a legacy upstream is fed by the session's GET stream (GATEWAY-
// REQUIREMENTS §16.1 "Subscriptions ⇄ GET stream"). When a server that served that GET answers its reopen
// without a stream (here 409, the v1 SDK transport's "Conflict: Only one SSE stream is allowed per session",
// as for a stream it still holds), Gatehouse gives the session up and its listens end, to be asked again on a
// new one. The server still holds the session it gave up: a client that no longer needs a session SHOULD
// DELETE it (2025-11-25/basic/transports.mdx §Session Management 5), and until 5 December none was sent, so
// the dead session stayed upstream until the server's own timeout, if it has one. A 404 needs no DELETE: the
// server said the session is gone. The upstream is a fake that must misbehave on purpose.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { waitFor } from '../helpers/otlp.js';
import { readSseUntil } from '../helpers/sse.js';

/**
 * A legacy upstream whose first GET of a session is a stream ended at once, and every later one `later`; a
 * tools/call is answered after `callMs`. `events` tells the order of DELETEs and call answers.
 */
async function upstream(later: { status: number; body: string }, callMs = 0) {
  const deletes: string[] = [];
  const events: string[] = [];
  /** The session each GET named. */
  const getSessions: string[] = [];
  let gets = 0;
  let sessions = 0;
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method === 'GET') {
      getSessions.push(String(req.headers['mcp-session-id']));
      if (++gets === 1) return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end();
      return void res.writeHead(later.status, { 'content-type': 'application/json' }).end(later.body);
    }
    if (req.method === 'DELETE') {
      deletes.push(String(req.headers['mcp-session-id']));
      events.push(`DELETE ${String(req.headers['mcp-session-id'])}`);
      return void res.writeHead(200).end();
    }
    const msg = JSON.parse(body) as { id?: unknown; method?: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'tools/call') {
      return void setTimeout(() => {
        events.push('call answered');
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'done' }] } }));
      }, callMs);
    }
    const result = msg.method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'conflicted', version: '1' } } : {};
    res.writeHead(200, { 'content-type': 'application/json', ...(msg.method === 'initialize' ? { 'mcp-session-id': `s-${++sessions}` } : {}) }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  });
  return { up, deletes, events, getSessions, gets: () => gets };
}

async function listenUntilEnded(url: string): Promise<Array<Record<string, any>>> {
  const listen = modernRequest(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res = await request(url, { method: 'POST', headers: listen.headers, body: listen.body, signal: AbortSignal.timeout(10_000) });
  assert.equal(res.statusCode, 200);
  // The acknowledgment, then the listen's result when the session is given up (after the reopen, ~1 s).
  return readSseUntil(res.body, (m) => m.some((x) => x.id === 1));
}

test('a session given up after its GET reopen was answered 409 is DELETEd upstream', async () => {
  const { up, deletes, getSessions, gets } = await upstream({ status: 409, body: '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Conflict: Only one SSE stream is allowed per session"},"id":null}' });
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
  try {
    const messages = await listenUntilEnded(gw.url);
    assert.equal(messages[0]?.method, 'notifications/subscriptions/acknowledged');
    assert.equal(gets(), 2, 'served once, refused on the reopen');
    assert.equal(getSessions[1], getSessions[0], 'both GETs on one session');
    for (let i = 0; i < 100 && !deletes.includes(getSessions[0]!); i++) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(deletes, [getSessions[0]], 'the session given up is DELETEd, once');
  } finally {
    await gw.close();
    await up.close();
  }
});

test('a call in flight on the session given up is not cut: the DELETE waits for it to end', async () => {
  const { up, deletes, events, getSessions, gets } = await upstream({ status: 409, body: '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Conflict: Only one SSE stream is allowed per session"},"id":null}' }, 2_000);
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
  try {
    const listening = listenUntilEnded(gw.url);
    // Sent while the listen is open, on the same pooled session (same caller, same capabilities); answered
    // 2 s later, after the GET's reopen (1 s) was refused. The listen is open once its GET reached the upstream.
    await waitFor('the listen\'s GET to reach the upstream', () => (gets() > 0 ? true : undefined));
    const call = modernRequest(2, 'tools/call', { name: 'slow', arguments: {} });
    const answered = await post(gw.url, call.body, call.headers);
    await listening;
    assert.equal(answered.status, 200, answered.text);
    assert.equal(answered.json().result?.content?.[0]?.text, 'done', answered.text);
    for (let i = 0; i < 100 && !deletes.includes(getSessions[0]!); i++) await new Promise((r) => setTimeout(r, 20));
    // (Gatehouse's own session, which listed the tools, is not the one given up.)
    assert.deepEqual(events.filter((e) => e === 'call answered' || e === `DELETE ${getSessions[0]}`), ['call answered', `DELETE ${getSessions[0]}`], 'the session is DELETEd once the call on it is over, not under it');
  } finally {
    await gw.close();
    await up.close();
  }
});

test('a session whose GET reopen was answered 404 is not DELETEd: the server said it is gone', async () => {
  const { up, deletes, getSessions, gets } = await upstream({ status: 404, body: '{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}' });
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
  try {
    await listenUntilEnded(gw.url);
    assert.equal(gets(), 2);
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(!deletes.includes(getSessions[0]!), `no DELETE of the session: ${JSON.stringify(deletes)}`);
  } finally {
    await gw.close();
    await up.close();
  }
});
