// One upstream served by pass-through: the names a client is shown in a tools/list that passes through are the
// names Gatehouse checked. Gatehouse gives clients only names of `[A-Za-z0-9_-]`, at most 64 characters
// (catalog/README.md §Public names; 2026-07-28 server/tools.mdx §Tool Names allows more, which model APIs
// refuse), and before a list passes through it lists the upstream itself to see that every name is one. The
// client's list was a second read of the upstream: a tool the upstream added between the two (its
// notifications/tools/list_changed, server/tools.mdx §List Changed Notification) reached the client under its
// own unsafe name, `get.user`. Now each page that passes through is checked too, and one that shows a name
// the catalog would rewrite turns the upstream over to the catalog: this page, and every answer after it,
// carry the catalog's names. The upstream is the v1 SDK's McpServer (a tool registered while it runs sends
// list_changed); the clients are the v1 SDK's. A modern case: a v2 SDK server whose lists may be kept a minute
// (caching.mdx §Time-to-Live), so Gatehouse's check reads its kept list while the client's goes up afresh.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpHandler, McpServer as ModernMcpServer } from '@modelcontextprotocol/server';
import { listenLoopback, writeFetchResponse } from '../fixtures/upstreams/node-adapter.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const TIMEOUT_MS = 10_000;
const SAFE_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const TOOL_REF = 'dev.gatehouse/tool_ref';

interface ChangingServer {
  url: string;
  /** Adds `name` to every session's server as soon as Gatehouse's own next tools/list (id `gh-…`) is answered. */
  addAfterGatehouseLists(name: string): void;
  close(): Promise<void>;
}

/**
 * A v1 SDK server (one McpServer per session, as the SDK's examples run) with `get_user`. The change is made
 * right after Gatehouse's own list is answered, so it falls, every run, between that read and the client's.
 */
async function startChangingServer(forEliciting: string[] = []): Promise<ChangingServer> {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: McpServer }>();
  const added = new Set<string>();
  let pending: string | undefined;
  const register = (server: McpServer, name: string): void => {
    server.registerTool(name, { description: `the tool ${name}` }, async () => ({ content: [{ type: 'text', text: `called ${name}` }] }));
  };
  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body = text === '' ? undefined : (JSON.parse(text) as { method?: string; id?: unknown; params?: { capabilities?: { elicitation?: unknown } } });
    const sid = req.headers['mcp-session-id'];
    let session = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (!session) {
      if (body?.method !== 'initialize') return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
      const server = new McpServer({ name: 'changing', version: '1.0.0' });
      register(server, 'get_user');
      for (const name of added) register(server, name);
      // Tools offered only to clients that declare elicitation (a legacy server may: lifecycle.mdx §Capability Negotiation).
      if (body.params?.capabilities?.elicitation !== undefined) for (const name of forEliciting) register(server, name);
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID(), onsessioninitialized: (id) => void sessions.set(id, { transport, server }) });
      await server.connect(transport);
      session = { transport, server };
    }
    await session.transport.handleRequest(req, res, body);
    if (pending !== undefined && body?.method === 'tools/list' && typeof body.id === 'string' && body.id.startsWith('gh-')) {
      const name = pending;
      pending = undefined;
      added.add(name);
      // registerTool on a connected server sends notifications/tools/list_changed on its own.
      for (const s of sessions.values()) register(s.server, name);
    }
  };
  const { server, port } = await listenLoopback(serve);
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    addAfterGatehouseLists: (name) => void (pending = name),
    async close() {
      for (const s of sessions.values()) await s.transport.close().catch(() => {});
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function connect(url: string, capabilities: Record<string, unknown> = {}): Promise<Client> {
  const client = new Client({ name: 'passthrough-list-checked', version: '1.0.0' }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)), { timeout: TIMEOUT_MS });
  return client;
}

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

test('a tool the upstream adds between Gatehouse\'s check and the client\'s list reaches the client under a safe name (catalog/README.md §Public names)', async () => {
  const up = await startChangingServer();
  cleanups.push(() => up.close());
  const gw: TestGateway = await startGateway({ upstreams: [{ name: 'solo', url: up.url }] });
  cleanups.push(() => gw.close());

  up.addAfterGatehouseLists('get.user');
  const client = await connect(gw.url);
  cleanups.push(() => client.close());
  const tools = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools;
  const names = tools.map((t) => t.name);
  assert.deepEqual(names.filter((n) => !SAFE_NAME.test(n)), [], `only safe names reach the client: ${JSON.stringify(names)}`);
  assert.ok(names.includes('get_user'), 'the safe name keeps its name');
  const dotted = tools.find((t) => t._meta?.[TOOL_REF] === 'solo/get.user');
  assert.ok(dotted !== undefined, `the added tool is listed, renamed, with its ref: ${JSON.stringify(tools)}`);
  assert.match(dotted.name, /^get_user_[0-9a-f]{8}$/);
  assert.ok(gw.logs.some((l) => l.msg === 'upstream now lists names that need rewriting; serving it through the catalog from now on'), 'the switch is logged');

  // From now on the catalog serves the upstream: a client (a new session: the one above was opened on the
  // pass-through, whose sessions the catalog cannot take over) sees the same names and calls the renamed tool.
  const again = await connect(gw.url);
  cleanups.push(() => again.close());
  const relisted = (await again.listTools(undefined, { timeout: TIMEOUT_MS })).tools.map((t) => t.name).sort();
  assert.deepEqual(relisted, [...names].sort());
  const result = await again.callTool({ name: dotted.name, arguments: {} }, undefined, { timeout: TIMEOUT_MS });
  assert.deepEqual(result.content, [{ type: 'text', text: 'called get.user' }]);
});

test('a tool offered only to clients declaring a capability, unchecked by Gatehouse\'s own list (made with none), reaches such a client under a safe name', async () => {
  const up = await startChangingServer(['ask.user']);
  cleanups.push(() => up.close());
  const gw: TestGateway = await startGateway({ upstreams: [{ name: 'solo', url: up.url }] });
  cleanups.push(() => gw.close());
  const client = await connect(gw.url, { elicitation: {} });
  cleanups.push(() => client.close());
  const tools = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools;
  const names = tools.map((t) => t.name);
  assert.deepEqual(names.filter((n) => !SAFE_NAME.test(n)), [], `only safe names reach the client: ${JSON.stringify(names)}`);
  // Named by a list made with the client's capabilities, so the tool is renamed rather than left out.
  assert.deepEqual(tools.map((t) => [t.name, t._meta?.[TOOL_REF]]), [['get_user', 'solo/get_user'], ['ask_user', 'solo/ask.user']]);
});

/** A v2 SDK server (a server per HTTP request) whose tools/list says it may be kept a minute. */
async function startKeptListServer(names: string[], prompts: string[] = []): Promise<{ url: string; close(): Promise<void> }> {
  const handler = createMcpHandler(() => {
    const kept = { ttlMs: 60_000, cacheScope: 'public' } as const;
    const server = new ModernMcpServer({ name: 'kept-list', version: '1.0.0' }, { cacheHints: { 'tools/list': kept, 'prompts/list': kept } });
    for (const name of names) server.registerTool(name, { description: `the tool ${name}` }, async () => ({ content: [{ type: 'text', text: `called ${name}` }] }));
    for (const name of prompts) server.registerPrompt(name, { description: `the prompt ${name}` }, async () => ({ messages: [{ role: 'user', content: { type: 'text', text: `prompt ${name}` } }] }));
    return server;
  }, { legacy: 'reject' });
  const { server, port } = await listenLoopback(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
    const request = new Request(`http://127.0.0.1:${port}${req.url ?? '/'}`, { method: req.method, headers, ...(body.length > 0 ? { body: new Uint8Array(body) } : {}) });
    await writeFetchResponse(res, await handler.fetch(request));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      await handler.close().catch(() => {});
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

test('a modern upstream\'s list kept by Gatehouse (ttlMs) while the upstream adds a tool: the client\'s list still shows only safe names', async () => {
  const names = ['get_user'];
  const up = await startKeptListServer(names);
  cleanups.push(() => up.close());
  const gw = await startGateway({ upstreams: [{ name: 'solo', url: up.url, era: 'modern' }] });
  cleanups.push(() => gw.close());
  const list = async (id: number): Promise<Array<{ name: string; _meta?: Record<string, unknown> }>> => {
    const req = modernRequest(id, 'tools/list');
    const res = await post(gw.url, req.body, req.headers);
    assert.equal(res.status, 200, res.text);
    return res.json().result.tools;
  };
  assert.deepEqual((await list(1)).map((t) => t.name), ['get_user'], 'all safe: passed through');
  names.push('get.user');
  const tools = await list(2);
  const listed = tools.map((t) => t.name);
  assert.deepEqual(listed.filter((n) => !SAFE_NAME.test(n)), [], `only safe names reach the client: ${JSON.stringify(listed)}`);
  const dotted = tools.find((t) => t._meta?.[TOOL_REF] === 'solo/get.user');
  assert.ok(dotted !== undefined && /^get_user_[0-9a-f]{8}$/.test(dotted.name), JSON.stringify(tools));
  const call = modernRequest(3, 'tools/call', { name: dotted.name, arguments: {} });
  const called = await post(gw.url, call.body, call.headers);
  assert.deepEqual(called.json().result.content, [{ type: 'text', text: 'called get.user' }], called.text);
});

test('the same for prompts: a prompt added while Gatehouse keeps the list reaches the client under a safe name', async () => {
  const prompts = ['greet'];
  const up = await startKeptListServer(['plain'], prompts);
  cleanups.push(() => up.close());
  const gw = await startGateway({ upstreams: [{ name: 'solo', url: up.url, era: 'modern' }] });
  cleanups.push(() => gw.close());
  const list = async (id: number): Promise<Array<{ name: string; _meta?: Record<string, unknown> }>> => {
    const req = modernRequest(id, 'prompts/list');
    const res = await post(gw.url, req.body, req.headers);
    assert.equal(res.status, 200, res.text);
    return res.json().result.prompts;
  };
  assert.deepEqual((await list(1)).map((p) => p.name), ['greet']);
  prompts.push('greet.me');
  const listed = await list(2);
  assert.deepEqual(listed.map((p) => p.name).filter((n) => !SAFE_NAME.test(n)), [], JSON.stringify(listed));
  const dotted = listed.find((p) => p._meta?.['dev.gatehouse/prompt_ref'] === 'solo/greet.me');
  assert.ok(dotted !== undefined && dotted.name === 'greet_me', JSON.stringify(listed));
  const get = modernRequest(3, 'prompts/get', { name: dotted.name });
  const got = await post(gw.url, get.body, get.headers);
  assert.deepEqual(got.json().result.messages, [{ role: 'user', content: { type: 'text', text: 'prompt greet.me' } }], got.text);
});
