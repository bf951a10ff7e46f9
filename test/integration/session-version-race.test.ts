// A request that races its session's initialize: the client has the session id from the initialize answer's
// headers and sends a request in the session before that answer's body, which says the negotiated version,
// has passed through Gatehouse. Without MCP-Protocol-Version it is judged under the negotiated version
// (2025-11-25/basic/transports.mdx §Protocol Version Header: the server relies on "the protocol version
// negotiated during initialization"), not under 2025-03-26: Gatehouse waits for the answer to say it. Until
// 5 December a 2025-06-18 session's batch sent in that window was served (2025-06-18 has no batches), and a
// single request went up without the header, for the upstream to take it for 2025-03-26.
// The real v1 SDK server behind Gatehouse (pass-through), made slow to finish its initialize answer.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const BASE = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const rpc = (id: number, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0' as const, id, method, params });
const echo = (id: number, text: string) => rpc(id, 'tools/call', { name: 'echo', arguments: { text } });

/** The messages of an answer, from a JSON body or SSE `data` lines. */
function messagesOf(contentType: string, text: string): Array<Record<string, any>> {
  if (contentType.startsWith('text/event-stream')) return text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5).trim()) as Record<string, any>);
  return text === '' ? [] : [JSON.parse(text) as Record<string, any>];
}

async function post(url: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; messages: Array<Record<string, any>> }> {
  const res = await fetch(url, { method: 'POST', headers: { ...BASE, ...headers }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  return { status: res.status, messages: messagesOf(res.headers.get('content-type') ?? '', await res.text()) };
}

describe('a request sent in a session before its initialize answer has said the version', () => {
  let upstream: V1HttpServer;
  let gw: TestGateway;
  /** Lets the initialize answer being held go on. */
  let release: () => void = () => {};

  before(async () => {
    upstream = await startV1HttpServer(
      (server) => server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text }] })),
      { tools: {} },
      // Only the test's own initializes (not one Gatehouse might send to learn the server's era).
      { holdInitializeBody: (initialize) => (initialize.params?.clientInfo?.name === 'race' ? new Promise<void>((resolve) => void (release = resolve)) : undefined) },
    );
    gw = await startGateway({ upstreams: [{ name: 'v1', url: upstream.url }] });
  });
  after(async () => {
    release();
    await gw?.close();
    await upstream?.close();
  });

  /**
   * Opens a 2025-06-18 session whose initialize answer is held after its headers, sends `racing` in it
   * without MCP-Protocol-Version, and lets the answer go on only once that request is at the gateway (two
   * requests in flight) or already answered. The racing request's answer.
   */
  async function race(racing: unknown): Promise<{ status: number; messages: Array<Record<string, any>> }> {
    const init = await fetch(gw.url, { method: 'POST', headers: BASE, body: JSON.stringify(rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'race', version: '1' } })), signal: AbortSignal.timeout(10_000) });
    const sid = init.headers.get('mcp-session-id');
    assert.ok(sid, 'the headers of the held answer issue the session');
    let answered = false;
    const answer = post(gw.url, racing, { 'mcp-session-id': sid }).finally(() => void (answered = true));
    for (let i = 0; i < 500 && !answered && gw.gateway.edge.inFlight < 2; i++) await sleep(10);
    release();
    const negotiated = messagesOf(init.headers.get('content-type') ?? '', await init.text()).find((m) => m.id === 0)?.result?.protocolVersion;
    assert.equal(negotiated, '2025-06-18');
    return answer;
  }

  test('a batch without the header is refused as the 2025-06-18 session it is in (400 / -32600), none of it sent up', async () => {
    const answer = await race([echo(10, 'batch-one'), echo(11, 'batch-two')]);
    assert.equal(answer.status, 400, JSON.stringify(answer.messages));
    assert.equal(answer.messages[0]?.error?.code, -32600);
    assert.match(answer.messages[0]?.error?.message, /negotiated 2025-06-18/);
    assert.equal(upstream.messages.filter((m) => m.method === 'tools/call' && String(m.params?.arguments?.text).startsWith('batch-')).length, 0);
  });

  test("a single request without the header goes up saying the session's version, 2025-06-18", async () => {
    const answer = await race(echo(20, 'single'));
    assert.equal(answer.status, 200, JSON.stringify(answer.messages));
    assert.equal(answer.messages.find((m) => m.id === 20)?.result?.content?.[0]?.text, 'single');
    const sent = upstream.messages.findIndex((m) => m.method === 'tools/call' && m.params?.arguments?.text === 'single');
    assert.equal(upstream.versionHeaders[sent], '2025-06-18');
  });
});
