// The protocol version of a legacy session's requests. 2025-11-25/basic/transports.mdx §Protocol Version
// Header (and 2025-06-18's): the client MUST send MCP-Protocol-Version on every request after
// initialization, and "If the server does not receive an MCP-Protocol-Version header, and has no other way
// to identify the version - for example, by relying on the protocol version negotiated during
// initialization - the server SHOULD assume protocol version 2025-03-26." Inside a session Gatehouse has
// that other way: the version its initialize's answer negotiated. So a 2025-06-18 session's batch without
// the header is refused 400 / -32600 (2025-06-18 removed batches), a 2025-03-26 session's is still served,
// requests with the right header go on as before, and a header is taken as sent (the session's version is a SHOULD the official conformance suite does not keep).
// Two real setups: the v1 SDK's own Streamable HTTP server behind Gatehouse (pass-through), and a catalog of
// two such servers (Gatehouse answers initialize itself, through its legacy bridge).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const BASE = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

const rpc = (id: number, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0' as const, id, method, params });

interface Answer {
  status: number;
  messages: Array<Record<string, any>>;
}

/** One POST; the messages of its answer, from a JSON body or SSE `data` lines. */
async function post(url: string, body: unknown, headers: Record<string, string>): Promise<Answer & { sessionId: string | null }> {
  const res = await fetch(url, { method: 'POST', headers: { ...BASE, ...headers }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  const messages = (res.headers.get('content-type') ?? '').startsWith('text/event-stream')
    ? text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).filter((d) => d !== '').map((d) => JSON.parse(d) as Record<string, any>)
    : text === ''
      ? []
      : [JSON.parse(text) as Record<string, any>];
  return { status: res.status, messages, sessionId: res.headers.get('mcp-session-id') };
}

/**
 * A session opened with raw HTTP, asking for `asked`: its id and the version the answer negotiated. The
 * `notifications/initialized` is sent as a client of that version does (with the header from 2025-06-18).
 */
async function openSession(url: string, asked: string): Promise<{ sid: string; negotiated: string }> {
  const init = await post(url, rpc(0, 'initialize', { protocolVersion: asked, capabilities: {}, clientInfo: { name: 'version-test', version: '1' } }), {});
  assert.equal(init.status, 200, JSON.stringify(init.messages));
  assert.ok(init.sessionId, 'the answer issues a session');
  const negotiated = init.messages.find((m) => m.id === 0)?.result?.protocolVersion as string;
  assert.equal(typeof negotiated, 'string');
  const ack = await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': init.sessionId, ...(negotiated === '2025-03-26' ? {} : { 'mcp-protocol-version': negotiated }) });
  assert.equal(ack.status, 202);
  return { sid: init.sessionId, negotiated };
}

const echoBatch = (first: number) => [rpc(first, 'tools/call', { name: 'echo', arguments: { text: `one-${first}` } }), rpc(first + 1, 'tools/call', { name: 'echo', arguments: { text: `two-${first}` } })];

function register(server: import('@modelcontextprotocol/sdk/server/mcp.js').McpServer): void {
  server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text }] }));
}

/** The cases, run against a gateway whose only tool the client calls is `tool`. */
function versionCases(setup: () => { gw: TestGateway; upstreams: V1HttpServer[]; tool: string }): void {
  const echoes = (upstreams: V1HttpServer[], text: string) => upstreams.flatMap((u) => u.messages).filter((m) => m.method === 'tools/call' && m.params?.arguments?.text === text).length;
  const batchOf = (tool: string, first: number) => echoBatch(first).map((m) => ({ ...m, params: { ...m.params, name: tool } }));

  test('a 2025-06-18 session: a batch without MCP-Protocol-Version is refused 400 / -32600, and none of it reaches the upstream', async () => {
    const { gw, upstreams, tool } = setup();
    const { sid, negotiated } = await openSession(gw.url, '2025-06-18');
    assert.equal(negotiated, '2025-06-18');
    const answer = await post(gw.url, batchOf(tool, 10), { 'mcp-session-id': sid });
    assert.equal(answer.status, 400, JSON.stringify(answer.messages));
    assert.equal(answer.messages[0]?.error?.code, -32600);
    assert.match(answer.messages[0]?.error?.message, /negotiated 2025-06-18/);
    assert.equal(echoes(upstreams, 'one-10') + echoes(upstreams, 'two-10'), 0);
    // The session itself is fine: one message with its header is served as before.
    const alone = await post(gw.url, batchOf(tool, 12)[0], { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' });
    assert.equal(alone.status, 200);
    assert.equal(alone.messages.find((m) => m.id === 12)?.result?.content?.[0]?.text, 'one-12');
  });

  test('a 2025-03-26 session: a batch without the header is still served, each message answered', async () => {
    const { gw, tool } = setup();
    const { sid, negotiated } = await openSession(gw.url, '2025-03-26');
    assert.equal(negotiated, '2025-03-26');
    const answer = await post(gw.url, batchOf(tool, 20), { 'mcp-session-id': sid });
    assert.equal(answer.status, 200, JSON.stringify(answer.messages));
    const texts = new Map(answer.messages.filter((m) => 'id' in m).map((m) => [m.id, m.result?.content?.[0]?.text]));
    assert.equal(texts.get(20), 'one-20');
    assert.equal(texts.get(21), 'two-20');
  });

  test('a 2025-06-18 session: one request without the header, and with the negotiated one, is served as before', async () => {
    const { gw, tool } = setup();
    const { sid } = await openSession(gw.url, '2025-06-18');
    for (const headers of [{}, { 'mcp-protocol-version': '2025-06-18' }] as Array<Record<string, string>>) {
      const answer = await post(gw.url, batchOf(tool, 30)[0], { 'mcp-session-id': sid, ...headers });
      assert.equal(answer.status, 200, JSON.stringify(answer.messages));
      assert.equal(answer.messages.find((m) => m.id === 30)?.result?.content?.[0]?.text, 'one-30');
    }
  });

  // The header is the client's word (the session's version is only a SHOULD): the official conformance suite
  // sends `2025-03-26` inside the 2025-11-25 sessions it opens, and is served.
  test("a header naming another version than the session's is taken as sent: a 2025-03-26 one may batch", async () => {
    const { gw, upstreams, tool } = setup();
    const { sid } = await openSession(gw.url, '2025-06-18');
    const batch = await post(gw.url, batchOf(tool, 40), { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-03-26' });
    assert.equal(batch.status, 200, JSON.stringify(batch.messages));
    assert.equal(echoes(upstreams, 'one-40'), 1);
    const alone = await post(gw.url, batchOf(tool, 42)[0], { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' });
    assert.equal(alone.status, 200, JSON.stringify(alone.messages));
    assert.equal(alone.messages.find((m) => m.id === 42)?.result?.content?.[0]?.text, 'one-42');
  });
}

describe('pass-through: the v1 SDK server behind Gatehouse', () => {
  let upstream: V1HttpServer;
  let gw: TestGateway;
  before(async () => {
    upstream = await startV1HttpServer(register, { tools: {} });
    gw = await startGateway({ upstreams: [{ name: 'v1', url: upstream.url }] });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  versionCases(() => ({ gw, upstreams: [upstream], tool: 'echo' }));

  test("the version is the one the answer negotiated, not the one asked: an unknown version asked, the server's latest given", async () => {
    const { sid, negotiated } = await openSession(gw.url, '2024-01-01');
    assert.notEqual(negotiated, '2025-03-26');
    const answer = await post(gw.url, echoBatch(50), { 'mcp-session-id': sid });
    assert.equal(answer.status, 400);
    assert.match(answer.messages[0]?.error?.message, new RegExp(`negotiated ${negotiated}`));
  });

  test("a request without the header reaches the upstream saying its session's version, not left to be taken for 2025-03-26", async () => {
    const sentWith = (text: string) => upstream.versionHeaders[upstream.messages.findIndex((m) => m.method === 'tools/call' && m.params?.arguments?.text === text)];
    const modern = await openSession(gw.url, '2025-06-18');
    const answer = await post(gw.url, echoBatch(60)[0], { 'mcp-session-id': modern.sid });
    assert.equal(answer.status, 200, JSON.stringify(answer.messages));
    assert.equal(sentWith('one-60'), '2025-06-18');
    // A 2025-03-26 session has no such header (it came with 2025-06-18): none is made up for it.
    const old = await openSession(gw.url, '2025-03-26');
    assert.equal((await post(gw.url, echoBatch(62)[0], { 'mcp-session-id': old.sid })).status, 200);
    assert.equal(sentWith('one-62'), undefined);
    // A header the client sent goes up as it came.
    assert.equal((await post(gw.url, echoBatch(64)[0], { 'mcp-session-id': modern.sid, 'mcp-protocol-version': '2025-06-18' })).status, 200);
    assert.equal(sentWith('one-64'), '2025-06-18');
  });
});

describe('catalog: two v1 SDK servers behind Gatehouse', () => {
  let one: V1HttpServer;
  let two: V1HttpServer;
  let gw: TestGateway;
  before(async () => {
    one = await startV1HttpServer(register, { tools: {} });
    two = await startV1HttpServer(register, { tools: {} });
    gw = await startGateway({ upstreams: [{ name: 'one', url: one.url }, { name: 'two', url: two.url }] });
  });
  after(async () => {
    await gw?.close();
    await one?.close();
    await two?.close();
  });

  versionCases(() => ({ gw, upstreams: [one, two], tool: 'one_echo' }));
});
