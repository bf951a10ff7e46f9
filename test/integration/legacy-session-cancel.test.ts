// A legacy client's notifications/cancelled for a call on an HTTP+SSE (2024-11-05) upstream. Gatehouse passed
// the notification up, but kept the call as its own in flight: the v1 SDK server stops a cancelled request and
// never answers it (2025-11-25 basic/utilities/cancellation.mdx §Behavior Requirements: a receiver SHOULD NOT
// send a response for a cancelled request), so the call waited on in Gatehouse's table of pending requests
// until its time limit (timeouts.callMs, five minutes by default), its POST open, and its session counted as
// busy: at the session cap (maxSessions) it could not make room for a new client, which was refused 503
// session_cap. A cancelled call now stops counting at once: the cancellation still goes up, the client's
// request ends without a response (cancellation.mdx: the receiver sends none; as the legacy-client bridge
// ends one), and the session can make room again. The upstream is the real server-everything in SSE mode
// (the v1 SDK's SSEServerTransport); its long-running tool keeps a call in flight. A `perSession` stdio child
// is held by the same session code: there a server that answers the cancelled call anyway (stdio-fake's `slow`)
// shows that the late answer is dropped, never taken for the next call's.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startEverythingSse, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, openLegacySession, post, rpc } from '../helpers/http.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));

let ev: EverythingHttp;
let gw: TestGateway;
const storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-cancel-')), 'gatehouse.db');
before(async () => {
  ev = await startEverythingSse();
  // era legacy: each legacy client gets an upstream session (an event stream) of its own; two at most.
  gw = await startGateway({ store: { kind: 'sqlite', path: storePath }, upstreams: [{ name: 'everything', url: ev.url, transport: 'sse', era: 'legacy', maxSessions: 2 }] });
});
after(async () => {
  await gw?.close();
  await ev?.close();
});

const initialize = (name: string) => openLegacySession(gw.url, name, '2024-11-05');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const longCall = (headers: Record<string, string>) => post(gw.url, rpc('long', 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 60, steps: 1 } }), headers);
const cancelLong = async (headers: Record<string, string>) => {
  const cancel = await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'long', reason: 'the user stopped it' } }), headers);
  assert.equal(cancel.status, 202, cancel.text);
};

/**
 * How a cancelled call's POST ended. The server never answers a cancelled call, so a POST that ends at all
 * was ended by Gatehouse: `deadline` (shared by the calls cancelled together) only bounds the wait, far
 * below the call's own time limit (timeouts.callMs, five minutes), which is what it waited for before.
 */
async function ended(call: ReturnType<typeof post>, deadline: Promise<undefined>): Promise<Awaited<ReturnType<typeof post>>> {
  const res = await Promise.race([call, deadline]);
  assert.ok(res !== undefined, 'the cancelled call’s POST ended (it waited for an answer the server never sends)');
  return res;
}

test('a call its client cancelled stops counting as in flight at once: its POST ends without a response, and its session can make room at the cap', { timeout: 60_000 }, async () => {
  const a = await initialize('a');
  assert.ok(a.headers, a.init.text);
  const b = await initialize('b');
  assert.ok(b.headers, b.init.text);

  // A: the call reaches its session (a first call has the catalog list the upstream, so A makes one
  // first), then its client cancels it.
  const warm = await post(gw.url, rpc('warm', 'tools/call', { name: 'echo', arguments: { message: 'warm' } }), a.headers);
  assert.equal(warm.status, 200, warm.text);
  const aCall = longCall(a.headers);
  await sleep(500);
  await cancelLong(a.headers);
  // B: the cancellation overtakes its request inside Gatehouse (two POSTs; the request may still be in the
  // stages before the upstream, here the catalog's first list): the request must not run when it comes.
  await cancelLong(b.headers);
  const bCall = longCall(b.headers);
  // A bound, not a speed: neither POST can end by an answer, as the server sends none (see ended()).
  const deadline = new Promise<undefined>((r) => setTimeout(r, 30_000, undefined).unref());

  for (const [name, call] of [['a', aCall], ['b', bCall]] as const) {
    const res = await ended(call, deadline);
    // cancellation.mdx §Behavior Requirements: no response is sent for a cancelled request.
    assert.equal(/"result"|"error"/.test(res.text), false, `${name}: no answer to the cancelled request: ${res.status} ${res.text}`);
  }

  // The audit: both calls ended by their client (aborted, client_closed), not failed by the upstream.
  const store = new SqliteStore(storePath);
  try {
    const records = (await store.readAudit({ limit: 100 })).filter((r) => r.tool === 'trigger-long-running-operation');
    assert.deepEqual(records.map((r) => [r.outcome, r.refusal]), [['aborted', 'client_closed'], ['aborted', 'client_closed']]);
  } finally {
    await store.close();
  }

  // Neither session has a call in flight any more: a third client gets the least recently used one's place
  // (before, both counted as busy and it was refused 503 session_cap for as long as the calls' time limit).
  const c = await initialize('c');
  assert.equal(c.init.status, 200, c.init.text);
  assert.ok(c.headers);
  const aAgain = await post(gw.url, rpc('echo-a', 'tools/call', { name: 'echo', arguments: { message: 'a' } }), a.headers);
  assert.equal(aAgain.status, 404, aAgain.text);
  assert.equal(aAgain.json().error.data.details.reason, 'session_cap');

  // The sessions that remain serve on; a cancelled call's id is free again.
  for (const session of [b.headers, c.headers]) {
    const echo = await post(gw.url, rpc('long', 'tools/call', { name: 'echo', arguments: { message: 'after' } }), session);
    assert.equal(echo.status, 200, echo.text);
    assert.match(echo.text, /Echo: after/);
  }
});

test('perSession stdio: a cancelled call ends at once, the server hears one cancellation, and its late answer is dropped, not given to the next call', { timeout: 30_000 }, async () => {
  const fake = await startGateway({ upstreams: [{ name: 'fake', command: [process.execPath, FAKE], processes: 'perSession' }] });
  try {
    const init = await post(fake.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) };
    // Answered at 7000 ms anyway (far past when its POST should end, so a loaded machine has room), cancelled at about 200.
    const first = post(fake.url, rpc(1, 'tools/call', { name: 'slow', arguments: { ms: 7000 } }), headers);
    await sleep(200);
    const cancel = await post(fake.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'stopped' } }), headers);
    assert.equal(cancel.status, 202, cancel.text);
    const ended = await first;
    // Causal, not timed: the server logs `answering 1` to stderr just before its late answer, so a POST that
    // ended before that line was ended by the cancellation, not by (or after) the late answer.
    const answering = (): unknown[] => fake.logs.filter((l) => l.msg === 'stdio upstream stderr' && String(l.line).startsWith('answering')).map((l) => l.line);
    assert.deepEqual(answering(), [], "the cancelled call's POST ended only once the server sent its late answer");
    assert.equal(/"result"|"error"/.test(ended.text), false, `no answer to the cancelled request: ${ended.status} ${ended.text}`);
    // In flight when the cancelled call's late answer comes (at 7000 ms), answered after it: the server's own
    // order of answers below shows it did, rather than the timing assuming it.
    const second = await post(fake.url, rpc(2, 'tools/call', { name: 'slow', arguments: { ms: 7500 } }), headers);
    assert.deepEqual(answering(), ['answering 1', 'answering 2'], 'the late answer came while the second call was in flight');
    const messages = second.text.startsWith('{') ? [second.json()] : second.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
    assert.deepEqual(messages.map((m) => [m.id, m.result?.content?.[0]?.text]), [[2, 'slow 7500']], `only the second call's own answer: ${second.text}`);
    // The client's cancellation went up once: Gatehouse sent none of its own besides.
    const told = fake.logs.filter((l) => l.msg === 'stdio upstream stderr' && String(l.line).startsWith('cancelled'));
    assert.deepEqual(told.map((l) => l.line), ['cancelled 1']);
  } finally {
    await fake.close();
  }
});
