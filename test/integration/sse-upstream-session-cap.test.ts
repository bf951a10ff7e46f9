// The sessions an HTTP+SSE (2024-11-05) upstream serves at once are capped (each is an event stream held
// open on the upstream); at the cap a new client's initialize makes room by ending the least recently used
// session. Until 4 December that was whichever session was used least recently, busy or not: a caller whose
// tools/call was still running saw it fail because someone else initialized. A session with a call in flight
// is now never ended to make room; when every session holds one, the new initialize is refused with 503
// session_cap and Retry-After (2025-11-25/basic/transports.mdx §Session Management: a client whose session
// ended gets 404 and starts anew, which is fine for an idle session and not for a call under way). The
// upstream is the real server-everything in SSE mode; its long-running tool keeps a call in flight.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEverythingSse, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { openLegacySession, post, rpc } from '../helpers/http.js';

let ev: EverythingHttp;
let gw: TestGateway;
before(async () => {
  ev = await startEverythingSse();
  // era legacy: each legacy client gets an upstream session (an event stream) of its own; two at most.
  gw = await startGateway({ upstreams: [{ name: 'everything', url: ev.url, transport: 'sse', era: 'legacy', maxSessions: 2 }] });
});
after(async () => {
  await gw?.close();
  await ev?.close();
});

const initialize = (name: string) => openLegacySession(gw.url, name, '2024-11-05');

const longCall = (headers: Record<string, string>, seconds: number) => post(gw.url, rpc('long', 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: seconds, steps: 1 } }), headers);
const echo = (headers: Record<string, string>) => post(gw.url, rpc('echo', 'tools/call', { name: 'echo', arguments: { message: 'hi' } }), headers);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('at the cap the least recently used idle session makes room, never one with a call in flight; all busy: 503 session_cap', { timeout: 60_000 }, async () => {
  const a = await initialize('a');
  assert.ok(a.headers, a.init.text);
  // A's call runs for four seconds: A is the least recently used session from here on, but busy.
  const aCall = longCall(a.headers, 4);
  await sleep(300);
  const b = await initialize('b');
  assert.ok(b.headers, b.init.text);
  assert.equal((await echo(b.headers)).status, 200);

  // A third client: the idle B makes room, not the older A.
  const c = await initialize('c');
  assert.ok(c.headers, c.init.text);
  const bAgain = await echo(b.headers);
  assert.equal(bAgain.status, 404, bAgain.text);
  assert.equal(bAgain.json().error.data.details.reason, 'session_cap');

  // C busy too: every session holds a call, so a fourth client is refused, clearly, and nothing ends.
  const cCall = longCall(c.headers, 2);
  await sleep(300);
  const d = await initialize('d');
  assert.equal(d.headers, undefined);
  assert.equal(d.init.status, 503, d.init.text);
  assert.ok(d.init.headers['retry-after'], 'told when to try again');
  const refusal = d.init.json().error;
  assert.equal(refusal.code, -32600);
  assert.equal(refusal.data.details.reason, 'session_cap');
  assert.match(refusal.message, /maxSessions/);
  assert.match(refusal.message, /call in flight/);

  // Both calls in flight finish as if nothing happened.
  for (const [name, call] of [['a', aCall], ['c', cCall]] as const) {
    const res = await call;
    assert.equal(res.status, 200, `${name}: ${res.text}`);
    assert.equal(res.text.includes('"error"'), false, `${name}: ${res.text}`);
    assert.match(res.text, /Long running operation completed/);
  }
});
