// The edge's session bindings (src/auth/session-binding.ts) hold at most `sessions.max` legacy sessions per
// caller. Until 4 December, the binding that made room for a caller's new session was its least recently
// used one whatever ran on it: a client whose long tools/call was still running lost its session under it,
// and every later request on that session (the rest of its work, or its answer to an elicitation) got 404
// session_cap. As with the session tables' own cap (src/upstream/session-table.ts makeRoom), the binding
// that ends is now the least recently used idle one, else one with only a listening stream open (its
// client learns from the 404 to start anew); when each has a call in flight, the new initialize is refused
// 503 session_cap with Retry-After before it reaches the upstream (2025-11-25/basic/transports.mdx
// §Session Management 3, 4: the server may end a session at any time, and its client then gets 404).
// Real v1 SDK clients (each holds a GET stream open, as the SDK does) against server-everything, one caller.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startEverythingHttp, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

let ev: EverythingHttp;
let gw: TestGateway;
const clients: Client[] = [];
before(async () => {
  ev = await startEverythingHttp();
  // Anonymous: every client is the same caller, so the per-caller bound (sessions.max) is the one met.
  gw = await startGateway({ upstreams: [{ name: 'everything', url: ev.url }], sessions: { max: 2 } });
});
after(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await gw?.close();
  await ev?.close();
});

async function connect(name: string): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  clients.push(client);
  return client;
}

/** A call of `seconds` that has reached the upstream (its first progress notification came) when this returns. */
async function longCall(client: Client, seconds: number): Promise<{ done: Promise<unknown> }> {
  let started!: () => void;
  const progressed = new Promise<void>((r) => (started = r));
  const done = client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: seconds, steps: seconds * 2 } }, undefined, { onprogress: () => started(), timeout: 60_000 });
  await Promise.race([progressed, done]);
  return { done };
}

const echo = (client: Client, message: string) => client.callTool({ name: 'echo', arguments: { message } });

test("at sessions.max a caller's busy session is never ended for its next one: an idle or listening one is, else 503 session_cap", { timeout: 90_000 }, async () => {
  const a = await connect('a');
  // A's call runs for ten seconds: from here on A is the caller's least recently used session, but busy.
  const aCall = await longCall(a, 10);
  const b = await connect('b');
  assert.match(JSON.stringify(await echo(b, 'b')), /Echo: b/);

  // A third session: B (only its GET stream open) makes room, not the older A.
  const c = await connect('c');
  await assert.rejects(echo(b, 'b again'), (err: Error & { code?: number }) => {
    assert.equal(err.code, 404, err.message);
    assert.match(err.message, /"reason":"session_cap"/);
    return true;
  });

  // C busy too: both sessions hold a call, so a fourth is refused, clearly, and nothing ends.
  const cCall = await longCall(c, 8);
  await assert.rejects(connect('d'), (err: Error & { code?: number }) => {
    assert.equal(err.code, 503, err.message);
    assert.match(err.message, /"reason":"session_cap"/);
    assert.match(err.message, /sessions\.max/);
    return true;
  });
  // The same initialize by hand: Retry-After, and refused before the upstream made a session for it.
  const sessionsUpstream = () => (ev.output().match(/Session initialized/g) ?? []).length;
  const made = sessionsUpstream();
  assert.ok(made >= 3, ev.output());
  const res = await fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e', version: '1' } } }),
  });
  const text = await res.text();
  assert.equal(res.status, 503, text);
  assert.ok(Number(res.headers.get('retry-after')) > 0, 'told when to try again');
  const body = JSON.parse(text) as { error: { code: number; data: { details: { reason: string } } } };
  assert.equal(body.error.code, -32600);
  assert.equal(body.error.data.details.reason, 'session_cap');
  assert.equal(sessionsUpstream(), made, 'no upstream session was made for a refused initialize');

  // Both calls finish, and both sessions go on serving their clients' later requests.
  for (const [name, call] of [['a', aCall], ['c', cCall]] as const) assert.match(JSON.stringify(await call.done), /Long running operation completed/, name);
  assert.match(JSON.stringify(await echo(a, 'a later')), /Echo: a later/);
  assert.match(JSON.stringify(await echo(c, 'c later')), /Echo: c later/);
});
