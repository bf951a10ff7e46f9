// A legacy client that sends a request with the id of one of its requests still running breaks
// 2025-11-25/basic/index.mdx §Requests ("The request ID MUST NOT have been previously used by the
// requestor within the same session"). Where Gatehouse holds the session itself (a stdio child in
// `processes: perSession`, an HTTP+SSE server's event stream, or a session it bridges: to a modern upstream,
// over shared stdio children), answers or cancellations are matched by id alone, so the second request
// cannot go on. It is refused as the client's mistake: a JSON-RPC Invalid Request (-32600) naming the id,
// not a 502 blaming the upstream (which it was until 3 December on the first two, "Error: duplicate request
// id 7"; on the bridges both ran, and a cancellation reached only the second). The first request is
// answered as if nothing had happened. (A legacy upstream served by pass-through holds its own sessions and
// judges its own ids.)

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startEverythingSse, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { waitFor } from '../helpers/otlp.js';

const EVERYTHING = 'node_modules/@modelcontextprotocol/server-everything/dist/index.js';
const VERSION = '2025-06-18';
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION };

/** An initialized legacy session at the gateway: its headers. */
async function legacySession(gw: TestGateway): Promise<Record<string, string>> {
  const init = await fetch(gw.url, { method: 'POST', headers: HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'duplicate-ids', version: '1' } } }), signal: AbortSignal.timeout(15_000) });
  assert.equal(init.status, 200, await init.clone().text());
  await init.text();
  const headers = { ...HEADERS, 'mcp-session-id': init.headers.get('mcp-session-id')! };
  const initialized = await fetch(gw.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), signal: AbortSignal.timeout(5_000) });
  assert.equal(initialized.status, 202);
  return headers;
}

type Answer = { status: number; message: Record<string, any> };

/** The JSON-RPC message of an answer's text, JSON or a stream of events (the last message on it). */
function messageOf(status: number, contentType: string, text: string): Answer {
  if (!contentType.startsWith('text/event-stream')) return { status, message: JSON.parse(text) };
  const datas = text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
  return { status, message: datas.at(-1) };
}

async function answerOf(res: Response): Promise<Answer> {
  return messageOf(res.status, res.headers.get('content-type') ?? '', await res.text());
}

function call(gw: TestGateway, headers: Record<string, string>, id: number | string, name: string, args: Record<string, unknown>): Promise<Answer> {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  return fetch(gw.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(20_000) }).then(answerOf);
}

/**
 * The long-running operation, asking for progress, its answer read as it comes: `progressed` resolves true
 * at its first notifications/progress (the call is running upstream, holding its id), false when its
 * answer ended without one.
 */
function longCall(gw: TestGateway, headers: Record<string, string>, id: number | string, duration: number, steps: number): { progressed: Promise<boolean>; answer: Promise<Answer> } {
  let seen!: (progressed: boolean) => void;
  const progressed = new Promise<boolean>((r) => (seen = r));
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration, steps }, _meta: { progressToken: `progress-${String(id)}` } } });
  const answer = fetch(gw.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(20_000) })
    .then(async (res) => {
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        text += decoder.decode(chunk.value, { stream: true });
        if (text.includes('"notifications/progress"')) seen(true);
      }
      return messageOf(res.status, res.headers.get('content-type') ?? '', text);
    })
    .finally(() => seen(false));
  return { progressed, answer };
}

/**
 * A slow call with `id`, then, while it runs upstream, a second request with the same id; both answers.
 * Running upstream: its first progress came, or `reachedUpstream` says so (an upstream that sends none).
 */
async function sameIdTwice(gw: TestGateway, id: number | string, reachedUpstream?: () => boolean): Promise<{ first: Answer; second: Answer }> {
  const headers = await legacySession(gw);
  const first = longCall(gw, headers, id, 1.5, 3);
  if (reachedUpstream === undefined) assert.ok(await first.progressed, 'the first call never ran upstream');
  else await waitFor('the first call to reach the upstream', () => (reachedUpstream() ? true : undefined));
  const second = await call(gw, headers, id, 'echo', { message: 'second' });
  return { first: await first.answer, second };
}

function assertRefusedAsDuplicate(second: { status: number; message: Record<string, any> }, id: number | string): void {
  assert.equal(second.status, 200, JSON.stringify(second));
  assert.equal(second.message.id, id);
  assert.equal(second.message.error?.code, -32600, `a JSON-RPC Invalid Request, not an upstream failure: ${JSON.stringify(second.message)}`);
  assert.match(second.message.error.message, new RegExp(`Request id ${JSON.stringify(id).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is held by a request of this session that is still running`));
}

function assertFirstAnswered(first: { status: number; message: Record<string, any> }, id: number | string): void {
  assert.equal(first.status, 200, JSON.stringify(first));
  assert.equal(first.message.id, id);
  assert.match(first.message.result?.content?.[0]?.text ?? '', /Long running operation completed/, JSON.stringify(first.message));
}

describe('a request id reused while its request runs (2025-11-25/basic/index.mdx §Requests)', () => {
  const gateways: TestGateway[] = [];
  let sse: EverythingHttp;
  before(async () => {
    sse = await startEverythingSse();
  });
  after(async () => {
    await Promise.all(gateways.map((gw) => gw.close()));
    await sse.close();
  });

  test('stdio, processes: perSession: the second is refused with -32600, the first answered', async () => {
    const gw = await startGateway({ upstreams: [{ name: 'ev', command: [process.execPath, EVERYTHING, 'stdio'], processes: 'perSession' }] });
    gateways.push(gw);
    const { first, second } = await sameIdTwice(gw, 7);
    assertRefusedAsDuplicate(second, 7);
    assertFirstAnswered(first, 7);
    // The id is free again once its request was answered.
    const headers = await legacySession(gw);
    const again = await call(gw, headers, 7, 'echo', { message: 'later' });
    assert.equal(again.message.result?.content?.[0]?.text, 'Echo: later');
  });

  test('an HTTP+SSE upstream (one event stream per session): the same, with a string id', async () => {
    const gw = await startGateway({ upstreams: [{ name: 'ev', url: sse.url }] });
    gateways.push(gw);
    const { first, second } = await sameIdTwice(gw, 'call-1');
    assertRefusedAsDuplicate(second, 'call-1');
    assertFirstAnswered(first, 'call-1');
  });

  test('a modern upstream (Gatehouse bridges the legacy session): the same; the upstream sees the first call only', async () => {
    // A modern upstream whose long-running operation takes 1.5 s; echo answers at once.
    const up = await startFakeUpstream((_req, res, body) => {
      const msg = JSON.parse(body) as { method: string; params?: { name?: string; arguments?: { message?: string } } };
      if (msg.method === 'tools/list') return jsonResult(res, body, { resultType: 'complete', tools: [{ name: 'trigger-long-running-operation', inputSchema: { type: 'object' } }, { name: 'echo', inputSchema: { type: 'object' } }], ttlMs: 0 });
      if (msg.params?.name === 'echo') return jsonResult(res, body, { resultType: 'complete', content: [{ type: 'text', text: `Echo: ${msg.params.arguments?.message}` }] });
      setTimeout(() => jsonResult(res, body, { resultType: 'complete', content: [{ type: 'text', text: 'Long running operation completed.' }] }), 1_500);
    }, { handshake: 'modern' });
    const gw = await startGateway({ upstreams: [{ name: 'ev', url: up.url, era: 'modern' }] });
    gateways.push(gw);
    try {
      const { first, second } = await sameIdTwice(gw, 7, () => up.requests.some((r) => r.body.includes('"tools/call"')));
      assertRefusedAsDuplicate(second, 7);
      assertFirstAnswered(first, 7);
      assert.equal(up.requests.filter((r) => r.body.includes('"tools/call"')).length, 1);
    } finally {
      await up.close();
    }
  });

  test('the number 7 and the string "7" are different ids: both are answered', async () => {
    const gw = await startGateway({ upstreams: [{ name: 'ev', command: [process.execPath, EVERYTHING, 'stdio'], processes: 'perSession' }] });
    gateways.push(gw);
    const headers = await legacySession(gw);
    const first = longCall(gw, headers, 7, 1, 2);
    assert.ok(await first.progressed, 'the first call never ran upstream');
    const second = await call(gw, headers, '7', 'echo', { message: 'string id' });
    assert.equal(second.message.id, '7');
    assert.equal(second.message.result?.content?.[0]?.text, 'Echo: string id', JSON.stringify(second.message));
    assertFirstAnswered(await first.answer, 7);
  });

  test('stdio, processes: shared (the legacy session is bridged over shared children): the same', async () => {
    const gw = await startGateway({ upstreams: [{ name: 'ev', command: [process.execPath, EVERYTHING, 'stdio'], processes: 'shared' }] });
    gateways.push(gw);
    const { first, second } = await sameIdTwice(gw, 7);
    assertRefusedAsDuplicate(second, 7);
    assertFirstAnswered(first, 7);
  });
});
