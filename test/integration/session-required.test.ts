// A legacy request without Mcp-Session-Id where the endpoint issues session ids. 2025-11-25/basic/
// transports.mdx §Session Management 2: "Servers that require a session ID SHOULD respond to requests that
// don't have an Mcp-Session-Id header (other than initialization) with HTTP 400 Bad Request". Gatehouse
// answers so at the door, before any stage governs the request, where the last initialize answered issued
// an id: the catalog (Gatehouse's own sessions) and a pass-through whose upstream issued one. Until 5
// December such a request went on as a session-less call: here, it opened an approval for a reviewer before
// the session's absence was noticed. Where the upstream is stateless (it issued no id), nothing changes.
// Real v1 SDK servers: stateful ones, and a stateless one (a transport per request, as its example serves).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { listenLoopback } from '../fixtures/upstreams/node-adapter.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const BASE = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
const ADMIN = { enabled: true, port: 0, token: 'adm_0123456789abcdefghijklmnopqrstuvwxyz' };
/** Every call needs a reviewer's approval: a session-less call that got past the door would open one. */
const POLICY = { approvals: [{ id: 'every-call', tools: ['*'] }] };

const rpc = (id: number, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0' as const, id, method, params });
const initialize = rpc(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'session-required', version: '1' } });

function register(server: McpServer): void {
  server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text }] }));
}

async function send(url: string, method: 'POST' | 'GET' | 'DELETE', body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string; sessionId: string | null }> {
  const res = await fetch(url, { method, headers: { ...BASE, ...headers }, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  // A GET that is served is a stream: only its status matters here.
  const text = method === 'GET' && res.status === 200 ? (await res.body?.cancel(), '') : await res.text();
  return { status: res.status, text, sessionId: res.headers.get('mcp-session-id') };
}

/** The session-less requests of a client whose endpoint issued it a session: each refused 400 / -32600 at the door. */
async function refusedWithoutSession(gw: TestGateway, tool: string): Promise<void> {
  const init = await send(gw.url, 'POST', initialize);
  assert.equal(init.status, 200, init.text);
  assert.ok(init.sessionId, 'the endpoint issues a session');
  const call = await send(gw.url, 'POST', rpc(1, 'tools/call', { name: tool, arguments: { text: 'no session' } }));
  assert.equal(call.status, 400, call.text);
  const error = (JSON.parse(call.text) as { id: unknown; error: { code: number; message: string } });
  assert.equal(error.id, 1);
  assert.equal(error.error.code, -32600);
  assert.match(error.error.message, /Mcp-Session-Id header is required/);
  assert.doesNotMatch(call.text, /approval/);
  for (const [method, body] of [['POST', [rpc(2, 'tools/list'), rpc(3, 'ping')]], ['GET', undefined], ['DELETE', undefined]] as const) {
    const other = await send(gw.url, method, body, method === 'POST' ? { 'mcp-protocol-version': '2025-03-26' } : {});
    assert.equal(other.status, 400, `${method}: ${other.text}`);
    assert.equal((JSON.parse(other.text) as { error: { code: number } }).error.code, -32600);
  }
  // Nothing of it opened an approval; the session itself is served (its call, as the policy says, awaits one).
  const opened = await fetch(`${gw.gateway.adminUrl!}/approvals?state=all`, { headers: { authorization: `Bearer ${ADMIN.token}` } });
  assert.deepEqual(((await opened.json()) as { approvals: unknown[] }).approvals, []);
  const inSession = await send(gw.url, 'POST', rpc(4, 'tools/call', { name: tool, arguments: { text: 'in session' } }), { 'mcp-session-id': init.sessionId });
  assert.equal(inSession.status, 200, inSession.text);
  assert.match(inSession.text, /approval_pending/);
}

describe('where the endpoint issues session ids', () => {
  let one: V1HttpServer;
  let two: V1HttpServer;
  before(async () => {
    one = await startV1HttpServer(register, { tools: {} });
    two = await startV1HttpServer(register, { tools: {} });
  });
  after(async () => {
    await one?.close();
    await two?.close();
  });

  test('a pass-through whose upstream issued one at initialize', async () => {
    const gw = await startGateway({ upstreams: [{ name: 'v1', url: one.url, era: 'legacy' }], admin: ADMIN, policy: POLICY });
    try {
      await refusedWithoutSession(gw, 'echo');
      assert.equal(one.messages.filter((m) => m.method === 'tools/call' && m.params?.arguments?.text === 'no session').length, 0);
    } finally {
      await gw.close();
    }
  });

  test("the catalog (Gatehouse's own sessions)", async () => {
    const gw = await startGateway({ upstreams: [{ name: 'one', url: one.url }, { name: 'two', url: two.url }], admin: ADMIN, policy: POLICY });
    try {
      await refusedWithoutSession(gw, 'one_echo');
    } finally {
      await gw.close();
    }
  });
});

test('a stateless upstream, which issued no session id: a session-less request is served as before', async () => {
  const upstream = await listenLoopback(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const server = new McpServer({ name: 'stateless', version: '1.0.0' });
    register(server);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close().catch(() => {}));
    await server.connect(transport);
    await transport.handleRequest(req, res, text === '' ? undefined : JSON.parse(text));
  });
  const gw = await startGateway({ upstreams: [{ name: 'stateless', url: `http://127.0.0.1:${upstream.port}/mcp`, era: 'legacy' }] });
  try {
    const init = await send(gw.url, 'POST', initialize);
    assert.equal(init.status, 200, init.text);
    assert.equal(init.sessionId, null);
    const call = await send(gw.url, 'POST', rpc(1, 'tools/call', { name: 'echo', arguments: { text: 'stateless' } }));
    assert.equal(call.status, 200, call.text);
    assert.match(call.text, /"text":"stateless"/);
  } finally {
    await gw.close();
    upstream.server.closeAllConnections();
    await new Promise<void>((resolve) => upstream.server.close(() => resolve()));
  }
});
