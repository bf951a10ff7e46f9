// A modern (2026-07-28) client (v2 SDK) through Gatehouse to a modern-only upstream: the request metadata
// headers and `_meta` pass untouched, the client's credentials stay at the gateway, and no legacy session
// machinery appears. Spec: shared/spec/docs/specification/2026-07-28/basic/transports/streamable-http.mdx (SH).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startModernServer, type ModernServer, type RecordedUpstreamRequest, type WhoamiReport } from '../fixtures/upstreams/modern-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const MODERN = '2026-07-28';

let upstream: ModernServer;
let gw: TestGateway;

interface Sent {
  headers: Headers;
  body: unknown;
}
interface Received {
  status: number;
  headers: Headers;
}
interface Connected {
  client: Client;
  /** What the client put on the wire, per HTTP request. */
  sent: Sent[];
  /** What came back to the client, per HTTP request. */
  received: Received[];
}

/**
 * A v2 client pinned to 2026-07-28 whose fetch adds credentials a gateway must never forward, and records
 * every request it sends and every response status and headers it gets.
 */
async function connect(): Promise<Connected> {
  const sent: Sent[] = [];
  const received: Received[] = [];
  const recordingFetch = async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', 'Bearer secret');
    headers.set('cookie', 'session=chocolate-chip');
    sent.push({ headers, body: typeof init?.body === 'string' ? (JSON.parse(init.body) as unknown) : undefined });
    const res = await fetch(url, { ...init, headers });
    received.push({ status: res.status, headers: res.headers });
    return res;
  };
  const transport = new StreamableHTTPClientTransport(new URL(gw.url), { fetch: recordingFetch });
  const client = new Client({ name: 'gatehouse-modern-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  await client.connect(transport, { timeout: 10_000 });
  return { client, sent, received };
}

function textOf(result: unknown): string {
  const content = ((result as { content?: unknown }).content ?? []) as Array<{ type: string; text?: string }>;
  return content.filter((c) => c.type === 'text').map((c) => c.text ?? '').join('\n');
}

function idOf(body: unknown): unknown {
  return (body as { id?: unknown } | undefined)?.id;
}

function metaOf(body: unknown): unknown {
  return (body as { params?: { _meta?: unknown } } | undefined)?.params?._meta;
}

/** The upstream request carrying the same JSON-RPC id and method as the client's request. */
function upstreamCopyOf(s: Sent, recorded: RecordedUpstreamRequest[]): RecordedUpstreamRequest | undefined {
  const b = s.body as { id?: unknown; method?: unknown };
  return recorded.find((r) => {
    const rb = r.body as { id?: unknown; method?: unknown } | undefined;
    return rb?.id === b.id && rb?.method === b.method;
  });
}

describe('modern pass-through: v2 client (2026-07-28) → Gatehouse → modern-only upstream', () => {
  before(async () => {
    upstream = await startModernServer();
    gw = await startGateway({ upstreams: [{ name: 'modern', url: upstream.url, era: 'modern' }] });
  });

  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  // SH §Sending Messages 6: a POSTed request is answered with a JSON object or an SSE stream; tools/list.
  test('tools/list', async () => {
    const { client } = await connect();
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), ['add', 'ask-with-state', 'echo', 'whoami-headers']);
      const add = tools.find((t) => t.name === 'add')!;
      assert.ok(add.outputSchema, 'add declares an outputSchema');
      assert.ok(add.inputSchema.properties && 'a' in add.inputSchema.properties && 'b' in add.inputSchema.properties);
    } finally {
      await client.close();
    }
  });

  // SH §Sending Messages 6: tools/call of `echo`.
  test('tools/call echo', async () => {
    const { client } = await connect();
    try {
      const result = await client.callTool({ name: 'echo', arguments: { text: 'modern hello' } });
      assert.notEqual(result.isError, true);
      assert.equal(textOf(result), 'modern hello');
    } finally {
      await client.close();
    }
  });

  // SH §Sending Messages 6: tools/call of `add`, whose result carries structuredContent.
  test('tools/call add returns structuredContent', async () => {
    const { client } = await connect();
    try {
      const result = await client.callTool({ name: 'add', arguments: { a: 19, b: 23 } });
      assert.notEqual(result.isError, true);
      assert.deepEqual(result.structuredContent, { sum: 42 });
      assert.equal(textOf(result), '42');
    } finally {
      await client.close();
    }
  });

  // SH §Request Metadata (§Protocol Version Header, §Standard Request Headers): MCP-Protocol-Version,
  // Mcp-Method and Mcp-Name mirror the body so intermediaries can route; they and the body's `_meta`
  // must reach the upstream exactly as the client sent them.
  test('MCP-Protocol-Version, Mcp-Method, Mcp-Name and _meta arrive untouched', async () => {
    const { client, sent } = await connect();
    const start = upstream.requests.length;
    try {
      const result = await client.callTool({ name: 'whoami-headers', arguments: {}, _meta: { 'com.example/trace': 'trace-7f3a' } });
      const report = JSON.parse(textOf(result)) as WhoamiReport;
      // What the upstream tool saw for this very call.
      assert.equal(report.headers['mcp-protocol-version'], MODERN);
      assert.equal(report.headers['mcp-method'], 'tools/call');
      assert.equal(report.headers['mcp-name'], 'whoami-headers');
      assert.deepEqual(report.meta, { 'com.example/trace': 'trace-7f3a' });
      assert.equal(report.envelope?.['io.modelcontextprotocol/protocolVersion'], MODERN);
      assert.deepEqual(report.envelope?.['io.modelcontextprotocol/clientInfo'], { name: 'gatehouse-modern-test', version: '1.0.0' });

      // Every request the client sent in this test, compared with its copy at the upstream.
      const call = sent.find((s) => (s.body as { method?: string }).method === 'tools/call')!;
      assert.ok(call, 'the client sent the tools/call');
      const recorded = upstream.requests.slice(start);
      const copy = upstreamCopyOf(call, recorded);
      assert.ok(copy, `tools/call id ${String(idOf(call.body))} never reached the upstream`);
      for (const name of ['mcp-protocol-version', 'mcp-method', 'mcp-name']) {
        assert.equal(copy.headers[name], call.headers.get(name) ?? undefined, `${name} changed on the way`);
      }
      assert.deepEqual(metaOf(copy.body), metaOf(call.body));
      assert.deepEqual(report.rawMeta, metaOf(call.body));
      assert.equal((metaOf(call.body) as Record<string, unknown>)['com.example/trace'], 'trace-7f3a');
      // server/discover is answered by Gatehouse itself (2026-07-28/server/discover.mdx), from the upstream's
      // own discover result fetched once by the era probe: the client's discover never travels upstream.
      const discover = sent.find((s) => (s.body as { method?: string }).method === 'server/discover')!;
      assert.ok(discover, 'the client sent server/discover');
      assert.equal(upstreamCopyOf(discover, upstream.requests), undefined, 'the client discover was answered by the gateway');
    } finally {
      await client.close();
    }
  });

  // 2026-07-28 security best practices, "Token Passthrough" (echoed in src/upstream/http.ts): a client's
  // credentials are for the gateway; the upstream MUST NOT receive the client's Authorization or Cookie.
  test('the client Authorization and Cookie headers never reach the upstream', async () => {
    const { client, sent } = await connect();
    const start = upstream.requests.length;
    try {
      const result = await client.callTool({ name: 'whoami-headers', arguments: {} });
      const report = JSON.parse(textOf(result)) as WhoamiReport;
      // The client really sent them.
      assert.ok(sent.length > 0);
      for (const s of sent) {
        assert.equal(s.headers.get('authorization'), 'Bearer secret');
        assert.equal(s.headers.get('cookie'), 'session=chocolate-chip');
      }
      assert.equal(report.headers.authorization, undefined, `authorization reached the upstream: ${String(report.headers.authorization)}`);
      assert.equal(report.headers.cookie, undefined, `cookie reached the upstream: ${String(report.headers.cookie)}`);
      const recorded = upstream.requests.slice(start);
      assert.ok(recorded.length > 0);
      for (const r of recorded) {
        assert.equal(r.headers.authorization, undefined);
        assert.equal(r.headers.cookie, undefined);
      }
    } finally {
      await client.close();
    }
  });

  // SH §Earlier Streamable HTTP Revisions: 2026-07-28 has no sessions, GET stream or DELETE; a gateway in
  // front of a modern server must not mint or forward Mcp-Session-Id, nor send GET/DELETE upstream.
  test('the gateway adds no Mcp-Session-Id and sends only POSTs to a modern upstream', async () => {
    const start = upstream.requests.length;
    const { client, received } = await connect();
    try {
      await client.listTools();
      await client.callTool({ name: 'echo', arguments: { text: 'no session' } });
      const recorded = upstream.requests.slice(start);
      assert.ok(recorded.length >= 2, `expected tools/list and tools/call upstream, saw ${recorded.length}`);
      for (const r of recorded) {
        assert.equal(r.method, 'POST');
        assert.equal(r.headers['mcp-session-id'], undefined, 'Mcp-Session-Id sent to the upstream');
      }
      assert.ok(received.length >= 3);
      for (const r of received) {
        assert.equal(r.status, 200);
        assert.equal(r.headers.get('mcp-session-id'), null, 'Mcp-Session-Id returned to the client');
      }
    } finally {
      await client.close();
    }
  });
});

describe('extensions', () => {
  test('an upstream\'s extensions are not advertised: Gatehouse does not route their methods (versioning.mdx §Extension Negotiation)', async () => {
    const { startFakeUpstream } = await import('../fixtures/upstreams/fake-upstream.js');
    const { modernRequest, post } = await import('../helpers/http.js');
    const discover = { supportedVersions: ['2026-07-28'], capabilities: { tools: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } }, resultType: 'complete', ttlMs: 0, cacheScope: 'public' };
    const up = await startFakeUpstream((_req, res, body) => {
      const msg = JSON.parse(body) as { id?: unknown; method?: string };
      if (msg.method === 'initialize') return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'] } } }));
      const result = msg.method === 'server/discover' ? discover : msg.method === 'tools/list' ? { tools: [], resultType: 'complete', ttlMs: 0, cacheScope: 'public' } : { resultType: 'complete' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    }, { handshake: false });
    const gw = await startGateway({ upstreams: [{ name: 'ext', url: up.url }] });
    try {
      const req = modernRequest(1, 'server/discover');
      const answer = (await post(gw.url, req.body, req.headers)).json() as { result: { capabilities: Record<string, unknown> } };
      assert.deepEqual(answer.result.capabilities, { tools: {} });
      const task = modernRequest(2, 'tasks/get', { taskId: 't-1' });
      assert.equal((await post(gw.url, task.body, task.headers)).status, 404, 'and its methods are not routed, consistently');
    } finally {
      await gw.close();
      await up.close();
    }
  });
});
