// The longest an HTTP upstream's answer may take, progress or not (upstreams[].timeouts.callMs):
// shared/spec/docs/specification/2026-07-28/basic/patterns/cancellation.mdx §Timeouts and
// 2025-11-25/basic/lifecycle.mdx §Timeouts: "implementations SHOULD always enforce a maximum timeout,
// regardless of progress notifications". The fake upstream misbehaves on purpose: its answer is a stream of
// progress notifications that never ends, which neither headersMs nor bodyMs (silence) would ever stop.
// Past callMs the client gets GW_ERR_UPSTREAM_TIMEOUT for its request, and the upstream's response is
// closed (Streamable HTTP: closing the stream cancels the request). Listens are not cut.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { request } from 'undici';
import { CallDeadlines } from '../../src/pipeline/call-deadline.js';
import { startFakeUpstream, jsonResult, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, rpc } from '../helpers/http.js';
import { readSseUntil } from '../helpers/sse.js';

const CALL_MS = 800;
const cleanup: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

interface Endless {
  upstream: FakeUpstream;
  /** Tool-call answers the upstream saw closed before it ended them (it never ends them). */
  closedCalls: number;
  /** Listening streams (legacy GETs, subscriptions/listen answers) closed. */
  closedListens: number;
  /** Sends `notifications/tools/list_changed` on every listening stream still open. */
  toolsChanged(): void;
  /** Told by the test's client of each progress it got: the upstream sends the next of the first ones then. */
  delivered(progress: number): void;
}

/**
 * Progress relayed in turns, that none can be sent unless the one before reached the client (so the client
 * seeing the last of them proves the gateway relayed each while the call was running, not at its end).
 */
const PROGRESS_IN_TURNS = 3;

/**
 * Streams progress for as long as the connection lasts: the first PROGRESS_IN_TURNS each once the client
 * got the one before (`delivered`), then one every 100 ms.
 */
function endlessStream(res: ServerResponse, progressToken: unknown, headers: Record<string, string>, onClose: () => void): (progress: number) => void {
  res.writeHead(200, { 'content-type': 'text/event-stream', ...headers });
  let n = 0;
  let timer: NodeJS.Timeout | undefined;
  const send = () => res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken, progress: ++n } })}\n\n`);
  res.on('close', () => {
    clearInterval(timer);
    onClose();
  });
  send();
  return (progress) => {
    if (progress !== n || res.closed || timer !== undefined) return;
    if (n < PROGRESS_IN_TURNS) send();
    else timer = setInterval(send, 100);
  };
}

async function endlessUpstream(era: 'legacy' | 'modern'): Promise<Endless> {
  let delivered: (progress: number) => void = () => {};
  const listening = new Set<ServerResponse>();
  const state = {
    closedCalls: 0,
    closedListens: 0,
    delivered: (progress: number) => delivered(progress),
    toolsChanged: () => {
      for (const res of listening) res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`);
    },
  } as Endless;
  const session: Record<string, string> = era === 'legacy' ? { 'mcp-session-id': 'endless-session' } : {};
  /** Holds a listening stream open (with keep-alives) until its client leaves. */
  const listen = (res: ServerResponse) => {
    listening.add(res);
    const timer = setInterval(() => res.write(': keep-alive\n\n'), 100);
    res.on('close', () => {
      clearInterval(timer);
      listening.delete(res);
      state.closedListens++;
    });
  };
  state.upstream = await startFakeUpstream(
    (req, res, body) => {
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return listen(res);
      }
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { _meta?: { progressToken?: unknown }; notifications?: unknown } };
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'subscriptions/listen') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: msg.params?.notifications ?? {}, _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id } } })}\n\n`);
        return listen(res);
      }
      if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'endless', version: '1' } }, session);
      if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [{ name: 'forever', inputSchema: { type: 'object' } }], ...(era === 'modern' ? { resultType: 'complete', ttlMs: 0, cacheScope: 'public' } : {}) }, session);
      if (msg.method === 'tools/call') return void (delivered = endlessStream(res, msg.params?._meta?.progressToken ?? 'p', session, () => state.closedCalls++));
      return jsonResult(res, body, era === 'modern' ? { resultType: 'complete' } : {}, session);
    },
    { handshake: era === 'modern' ? 'modern' : true },
  );
  cleanup.push(() => state.upstream.close());
  return state;
}

async function gatewayFor(up: Endless, era: 'legacy' | 'modern', callDeadlines?: CallDeadlines): Promise<TestGateway> {
  const gw = await startGateway({ upstreams: [{ name: 'endless', url: up.upstream.url, era, timeouts: { callMs: CALL_MS } }] }, callDeadlines === undefined ? {} : { callDeadlines });
  cleanup.push(() => gw.close());
  return gw;
}

/**
 * The gateway's deadline clock, held still until the client has got the progress sent in turns, then the
 * real one again: the cut comes at callMs all the same, but never before the turns are done. With the
 * clock running, a machine slow enough that three turns took 800 ms failed the test; and a gateway that
 * kept progress back until the end never releases it, so the answer never comes and the test fails.
 */
function heldUntilTurns(up: Endless): { deadlines: CallDeadlines; delivered(progress: number): void } {
  let held = true;
  return {
    deadlines: new CallDeadlines(250, () => (held ? Number.NEGATIVE_INFINITY : performance.now())),
    delivered: (progress) => {
      if (progress >= PROGRESS_IN_TURNS) held = false;
      up.delivered(progress);
    },
  };
}

/**
 * Posts `body`, reads the SSE answer until the request's own answer, telling `delivered` of each progress
 * as it comes; returns the answer, the progress values seen in order and how long it took.
 */
async function callUntilAnswered(url: string, body: string, headers: Record<string, string>, id: unknown, delivered: (progress: number) => void = () => {}) {
  const started = Date.now();
  const res = await request(url, { method: 'POST', headers, body });
  assert.match(String(res.headers['content-type']), /^text\/event-stream/);
  let told = 0;
  const messages = await readSseUntil(
    res.body,
    (ms) => {
      for (; told < ms.length; told++) if (ms[told]!.method === 'notifications/progress') delivered(Number(ms[told]!.params.progress));
      return ms.some((m) => m.id === id);
    },
    6_000,
  );
  const answer = messages.find((m) => m.id === id);
  return { answer, progress: messages.filter((m) => m.method === 'notifications/progress').map((m) => Number(m.params.progress)), ms: Date.now() - started };
}

/**
 * Progress went on while the call ran, and the cut came all the same: the client got the progress sent in
 * turns (each sent only once the one before had reached it), and every progress it got, in order.
 */
function assertProgressRelayedUntilCut(progress: number[]): void {
  assert.deepEqual(progress, Array.from({ length: progress.length }, (_, i) => i + 1), 'progress relayed in order, none lost');
  assert.ok(progress.length >= PROGRESS_IN_TURNS, `progress sent in turns reached the client while the call ran (${progress.join(', ')})`);
}

async function waitFor(what: string, check: () => boolean, ms = 3_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Opens a listen with `open`, then runs `call` (a call cut at its deadline, started after the listen, so past
 * the listen's own callMs too), and checks the listen was never watched and is still served end to end.
 */
async function assertListenOutlivesCall(up: Endless, deadlines: CallDeadlines, open: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string }, call: () => ReturnType<typeof callUntilAnswered>, url: string): Promise<void> {
  const controller = new AbortController();
  const res = await request(url, { ...open, signal: controller.signal });
  assert.equal(res.statusCode, 200);
  assert.equal(deadlines.size, 0, 'the listen\'s answer is not watched by the call deadline');
  const chunks: Buffer[] = [];
  const reading = (async () => {
    try {
      for await (const c of res.body) chunks.push(c as Buffer);
    } catch {
      // aborted below
    }
  })();
  try {
    const { answer, ms } = await call();
    assertTimedOut(answer, ms);
    await waitFor('the upstream response closed', () => up.closedCalls === 1);
    // Sent after the cut: it reaches the client only through a listen still open at both ends.
    up.toolsChanged();
    await waitFor('the notification sent after the cut reached the client on the listen', () => Buffer.concat(chunks).toString('utf8').includes('notifications/tools/list_changed'));
    assert.equal(up.closedListens, 0, 'the upstream listening stream was not closed');
    assert.equal(res.body.destroyed, false, "the client's listening stream is still open");
    assert.doesNotMatch(Buffer.concat(chunks).toString('utf8'), /GW_ERR_UPSTREAM_TIMEOUT/);
  } finally {
    controller.abort();
    await reading;
  }
}

function assertTimedOut(answer: Record<string, any> | undefined, ms: number): void {
  assert.ok(answer, 'the request got an answer');
  assert.equal(answer.error?.data?.code, 'GW_ERR_UPSTREAM_TIMEOUT', JSON.stringify(answer));
  assert.match(answer.error.message, /within 800 ms \(timeouts\.callMs\)/);
  assert.ok(ms >= CALL_MS - 50, `cut after ${ms} ms, before callMs`);
}

describe('timeouts.callMs: a maximum for every answer, however much progress it reports', () => {
  test('legacy pass-through: the answer is cut with GW_ERR_UPSTREAM_TIMEOUT and the upstream stream closed', async () => {
    const up = await endlessUpstream('legacy');
    const clock = heldUntilTurns(up);
    const gw = await gatewayFor(up, 'legacy', clock.deadlines);
    const session = await legacySession(gw.url);
    const { answer, progress, ms } = await callUntilAnswered(gw.url, rpc(1, 'tools/call', { name: 'forever', arguments: {}, _meta: { progressToken: 't1' } }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, 1, clock.delivered);
    assertTimedOut(answer, ms);
    assertProgressRelayedUntilCut(progress);
    await waitFor('the upstream response closed', () => up.closedCalls === 1);
  });

  test('legacy pass-through: an upstream that falls silent after the cut still has its request closed at once', async () => {
    // One progress event, then nothing: bodyMs (5 minutes by default) would otherwise hold the upstream request.
    const state = { closed: 0 };
    const up = await startFakeUpstream((req, res, body) => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const msg = JSON.parse(body) as { id?: unknown; method: string };
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'silent', version: '1' } }, { 'mcp-session-id': 'silent-session' });
      if (msg.method !== 'tools/call') return jsonResult(res, body, { tools: [] }, { 'mcp-session-id': 'silent-session' });
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'silent-session' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } })}\n\n`);
      res.on('close', () => state.closed++);
    });
    cleanup.push(() => up.close());
    const gw = await startGateway({ upstreams: [{ name: 'silent', url: up.url, era: 'legacy', timeouts: { callMs: CALL_MS } }] });
    cleanup.push(() => gw.close());
    const session = await legacySession(gw.url);
    const { answer, ms } = await callUntilAnswered(gw.url, rpc(7, 'tools/call', { name: 'quiet', arguments: {}, _meta: { progressToken: 't' } }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, 7);
    assertTimedOut(answer, ms);
    await waitFor('the upstream response closed', () => state.closed === 1, 2_000);
  });

  test('modern pass-through: the same', async () => {
    const up = await endlessUpstream('modern');
    const clock = heldUntilTurns(up);
    const gw = await gatewayFor(up, 'modern', clock.deadlines);
    const m = modernRequest(2, 'tools/call', { name: 'forever', arguments: {}, _meta: { progressToken: 't2' } });
    const { answer, progress, ms } = await callUntilAnswered(gw.url, m.body, m.headers, 2, clock.delivered);
    assertTimedOut(answer, ms);
    assertProgressRelayedUntilCut(progress);
    await waitFor('the upstream response closed', () => up.closedCalls === 1);
  });

  test('modern client → legacy upstream (bridged): the same', async () => {
    const up = await endlessUpstream('legacy');
    const gw = await gatewayFor(up, 'legacy');
    const m = modernRequest(3, 'tools/call', { name: 'forever', arguments: {}, _meta: { progressToken: 't3' } });
    const { answer, ms } = await callUntilAnswered(gw.url, m.body, m.headers, 3, up.delivered);
    assertTimedOut(answer, ms);
    await waitFor('the upstream response closed', () => up.closedCalls === 1);
  });

  test('legacy client → modern upstream (bridged): the same', async () => {
    const up = await endlessUpstream('modern');
    const gw = await gatewayFor(up, 'modern');
    const session = await legacySession(gw.url);
    const { answer, ms } = await callUntilAnswered(gw.url, rpc(4, 'tools/call', { name: 'forever', arguments: {}, _meta: { progressToken: 't4' } }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, 4, up.delivered);
    assertTimedOut(answer, ms);
    await waitFor('the upstream response closed', () => up.closedCalls === 1);
  });

  test('several upstreams (the catalog): the limit of the upstream the tool is routed to', async () => {
    const up = await endlessUpstream('legacy');
    const other = await endlessUpstream('modern');
    const gw = await startGateway({
      upstreams: [
        { name: 'endless', url: up.upstream.url, era: 'legacy', timeouts: { callMs: CALL_MS } },
        { name: 'other', url: other.upstream.url, era: 'modern' },
      ],
    });
    cleanup.push(() => gw.close());
    const list = modernRequest(5, 'tools/list');
    const tools = ((await (await request(gw.url, { method: 'POST', headers: list.headers, body: list.body })).body.json()) as { result: { tools: Array<{ name: string; _meta?: Record<string, unknown> }> } }).result.tools;
    const forever = tools.find((t) => JSON.stringify(t._meta ?? {}).includes('endless/forever'));
    assert.ok(forever, JSON.stringify(tools));
    const m = modernRequest(6, 'tools/call', { name: forever.name, arguments: {}, _meta: { progressToken: 't6' } });
    const { answer, ms } = await callUntilAnswered(gw.url, m.body, m.headers, 6, up.delivered);
    assertTimedOut(answer, ms);
    await waitFor('the upstream response closed', () => up.closedCalls === 1);
    assert.equal(other.closedCalls, 0);
  });

  // A listen may stay open for as long as its client wants; only a request's answer is bounded. The upstream
  // stage bounds an answer only when it answers a POSTed request (ctx.kind 'request': a GET carries no
  // message) other than subscriptions/listen: each listen below is checked not to be watched at all (the
  // deadlines' `size`, read once its answer began), then to outlive a call of its own session cut at its
  // deadline, and to carry a notification sent after that cut.
  test('a legacy GET stream (a listen) stays open past callMs', async () => {
    const up = await endlessUpstream('legacy');
    const deadlines = new CallDeadlines();
    const gw = await gatewayFor(up, 'legacy', deadlines);
    const session = await legacySession(gw.url);
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    await assertListenOutlivesCall(up, deadlines, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } }, () =>
      callUntilAnswered(gw.url, rpc(8, 'tools/call', { name: 'forever', arguments: {}, _meta: { progressToken: 't8' } }), headers, 8, up.delivered), gw.url);
  });

  test('a modern subscriptions/listen stays open past callMs', async () => {
    const up = await endlessUpstream('modern');
    const deadlines = new CallDeadlines();
    const gw = await gatewayFor(up, 'modern', deadlines);
    const listen = modernRequest(9, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    const call = modernRequest(10, 'tools/call', { name: 'forever', arguments: {}, _meta: { progressToken: 't10' } });
    await assertListenOutlivesCall(up, deadlines, { method: 'POST', headers: listen.headers, body: listen.body }, () => callUntilAnswered(gw.url, call.body, call.headers, 10, up.delivered), gw.url);
  });
});
