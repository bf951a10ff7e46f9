// An old client that speaks only the HTTP+SSE transport of 2024-11-05 (the v1 SDK's SSEClientTransport)
// connects to Gatehouse's SSE endpoint (listen.ssePath) and reaches upstreams of every kind behind it: a
// 2025-era server over Streamable HTTP, a modern (2026-07-28) server, and a stdio child. In each: tools,
// a call, an elicitation answered by the client, progress; an access rule hiding a tool; the session bound
// to the caller who opened it. Then the hostile cases and the bounds.
// Spec: 2025-11-25/basic/transports.mdx §Backwards Compatibility; 2024-11-05/basic/transports.mdx §HTTP
// with SSE ("the server MUST send an endpoint event … Server messages are sent as SSE message events").

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, LoggingMessageNotificationSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { hashKey } from '../../src/auth/key-hash.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { assertElicitationRoundTrip, assertProgressRelayedOneByOne, textOf } from '../helpers/v1-everything.js';
import { startEverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startModernMatrixServer } from '../fixtures/upstreams/modern-matrix-server.js';
import { isAlive, stdioChildPids } from '../helpers/stdio-children.js';

const KEY_A = 'gh_sse_owner_0123456789abcdefghijklmnopqrst';
const KEY_B = 'gh_sse_other_0123456789abcdefghijklmnopqrst';
const EVERYTHING = 'node_modules/@modelcontextprotocol/server-everything/dist/index.js';
const API_KEYS = [
  { id: 'owner', hash: hashKey(KEY_A), scopes: [] },
  { id: 'other', hash: hashKey(KEY_B), scopes: [] },
];

interface Cell {
  name: string;
  start(): Promise<{ upstream: Record<string, unknown>; close(): Promise<void> }>;
  /** A tool the upstream has and an access rule hides (its original name). */
  hidden: string;
  /** The upstream has server-everything's `toggle-simulated-logging`: log messages outside any call. */
  logging: boolean;
}

const cells: Cell[] = [
  {
    name: 'a 2025-era server over Streamable HTTP (server-everything, pass-through)',
    async start() {
      const up = await startEverythingHttp();
      return { upstream: { name: 'ev', url: up.url, era: 'legacy' }, close: () => up.close() };
    },
    hidden: 'get-sum',
    logging: true,
  },
  {
    name: 'a modern 2026-07-28 server (era bridging)',
    async start() {
      const up = await startModernMatrixServer({ legacy: 'reject' });
      return { upstream: { name: 'ev', url: up.url }, close: () => up.close() };
    },
    hidden: 'modern-fixture-marker',
    logging: false,
  },
  {
    name: 'a stdio server (server-everything as a child process)',
    async start() {
      return { upstream: { name: 'ev', command: [process.execPath, EVERYTHING, 'stdio'], processes: 'perSession' }, close: async () => {} };
    },
    hidden: 'get-sum',
    logging: true,
  },
];

function sseUrl(gw: TestGateway): URL {
  return new URL('/sse', gw.origin);
}

/** The v1 SDK's HTTP+SSE client with an API key in the Authorization header (GET and POSTs alike). */
async function connectSse(
  gw: TestGateway,
  opts: { key?: string; elicitation?: (req: ElicitRequest) => Record<string, unknown> } = {},
): Promise<{ client: Client; transport: SSEClientTransport; endpoint: URL }> {
  const transport = new SSEClientTransport(sseUrl(gw), { requestInit: { headers: { authorization: `Bearer ${opts.key ?? KEY_A}` } } });
  const client = new Client({ name: 'old-sse-client', version: '1.0.0' }, { capabilities: opts.elicitation ? { elicitation: {} } : {} });
  if (opts.elicitation) {
    const answer = opts.elicitation;
    client.setRequestHandler(ElicitRequestSchema, async (req) => answer(req) as never);
  }
  await client.connect(transport, { timeout: 15_000 });
  // The URL the `endpoint` event named (the SDK keeps it to itself).
  const endpoint = (transport as unknown as { _endpoint: URL })._endpoint;
  return { client, transport, endpoint };
}

async function legacySessions(gw: TestGateway): Promise<number> {
  const res = await request(gw.gateway.metricsUrl!);
  const line = (await res.body.text()).split('\n').find((l) => l.startsWith('gatehouse_legacy_sessions '));
  return Number(line!.split(' ')[1]);
}

async function eventually(cond: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

function postMessage(url: URL | string, key: string | undefined, body: unknown) {
  return request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, body: JSON.stringify(body) });
}

for (const cell of cells) {
  describe(`SSE client → Gatehouse → ${cell.name}`, () => {
    /** With an access rule (so the single upstream is served through the catalog). */
    let gw: TestGateway;
    /** Without rules: the upstream's own answers pass through. */
    let plain: TestGateway;
    let up: Awaited<ReturnType<Cell['start']>>;
    const clients: Client[] = [];

    before(async () => {
      up = await cell.start();
      const common = { listen: { ssePath: '/sse' }, upstreams: [up.upstream], auth: { apiKeys: API_KEYS }, metrics: { enabled: true, port: 0 } };
      gw = await startGateway({ ...common, policy: { rules: [{ id: 'hide-one', access: 'deny', tools: [`ev/${cell.hidden}`] }, { access: 'allow', tools: ['*'] }] } });
      plain = await startGateway(common);
    });
    after(async () => {
      for (const c of clients) await c.close().catch(() => {});
      for (const g of [gw, plain]) {
        await g?.close();
        for (const pid of stdioChildPids(g)) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      }
      await up?.close();
    });

    test('tools/list and tools/call, with the access rule hiding a tool', async () => {
      const { client, endpoint } = await connectSse(gw);
      clients.push(client);
      // The endpoint is on Gatehouse's origin and carries no credential, only the session's name.
      assert.equal(endpoint.origin, gw.origin);
      assert.equal(endpoint.pathname, '/sse/messages');
      assert.deepEqual([...endpoint.searchParams.keys()], ['session']);
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('echo'), names.join(', '));
      assert.ok(!names.includes(cell.hidden), `${cell.hidden} is hidden by the access rule: ${names.join(', ')}`);
      assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { message: 'over the old transport' } })), 'Echo: over the old transport');
      const refused = await client.callTool({ name: cell.hidden, arguments: { a: 1, b: 2 } }).then(
        (r) => textOf(r),
        (err: Error) => err.message,
      );
      assert.doesNotMatch(refused, /^3$|The sum/, 'the hidden tool ran');
    });

    test('without rules, the upstream passes through: tools/list and tools/call', async () => {
      const { client } = await connectSse(plain);
      clients.push(client);
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('echo') && names.includes(cell.hidden), names.join(', '));
      assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { message: 'straight through' } })), 'Echo: straight through');
    });

    test('an elicitation: the server asks on the stream, the client answers by POST', async () => {
      await assertElicitationRoundTrip(
        async (opts) => {
          const { client, transport } = await connectSse(gw, opts);
          clients.push(client);
          return { client, transport: transport as unknown as StreamableHTTPClientTransport };
        },
        { name: 'Ada', check: true },
      );
    });

    test('progress notifications arrive one by one before the result', async () => {
      const { client } = await connectSse(gw);
      clients.push(client);
      await assertProgressRelayedOneByOne(client);
    });

    if (cell.logging) {
      // Without rules: through the catalog, messages unrelated to any call are not relayed (on any transport).
      test('server messages outside any call arrive on the stream too', async () => {
        const { client } = await connectSse(plain);
        clients.push(client);
        const logged: string[] = [];
        client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void logged.push(String(n.params.data)));
        assert.match(textOf(await client.callTool({ name: 'toggle-simulated-logging', arguments: {} })), /Started simulated/);
        // The server sends one at once and one every 5 s, unrelated to any request (its GET stream).
        assert.ok(await eventually(async () => logged.length >= 2, 12_000), `log messages received: ${logged.length}`);
        assert.match(logged[0]!, /-level message|level-message/);
        await client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
      });
    }

    test("the session belongs to whoever opened it: another caller's POST is 404 and changes nothing", async () => {
      const seen: unknown[] = [];
      const { client, endpoint } = await connectSse(gw);
      clients.push(client);
      client.fallbackNotificationHandler = async (n) => void seen.push(n);
      const thief = await postMessage(endpoint, KEY_B, { jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'echo', arguments: { message: 'stolen' } } });
      assert.equal(thief.statusCode, 404);
      const body = (await thief.body.json()) as { id: unknown; error: { code: number; data: { details: { reason: string } } } };
      assert.equal(body.error.code, -32001);
      assert.equal(body.error.data.details.reason, 'unknown');
      // The same answer as for a session that does not exist: nothing tells the two apart.
      const unknown = await postMessage(new URL(`/sse/messages?session=${'A'.repeat(22)}`, gw.origin), KEY_B, { jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'echo', arguments: { message: 'stolen' } } });
      assert.equal(unknown.statusCode, 404);
      assert.deepEqual(await unknown.body.json(), body);
      // Without a credential: 401, before the session is looked at.
      const anonymous = await postMessage(endpoint, undefined, { jsonrpc: '2.0', id: 'y', method: 'ping' });
      assert.equal(anonymous.statusCode, 401);
      await anonymous.body.dump();
      // The owner carries on, and nothing of the thief's reached its stream.
      assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { message: 'still mine' } })), 'Echo: still mine');
      assert.deepEqual(seen, []);
      // The other caller has sessions of its own.
      const other = await connectSse(gw, { key: KEY_B });
      clients.push(other.client);
      assert.notEqual(other.endpoint.href, endpoint.href);
      assert.equal(textOf(await other.client.callTool({ name: 'echo', arguments: { message: 'mine' } })), 'Echo: mine');
    });

    test('a dropped stream ends the session behind it, as DELETE would', async () => {
      const before = await legacySessions(gw);
      const { client, endpoint } = await connectSse(gw);
      assert.equal(await legacySessions(gw), before + 1);
      await client.close();
      assert.ok(await eventually(async () => (await legacySessions(gw)) === before, 10_000), 'the session behind the stream did not end');
      const late = await postMessage(endpoint, KEY_A, { jsonrpc: '2.0', id: 'late', method: 'ping' });
      assert.equal(late.statusCode, 404);
      await late.body.dump();
    });
  });
}

describe('SSE endpoint: the front door', () => {
  let gw: TestGateway;
  let plain: TestGateway;
  let up: Awaited<ReturnType<typeof startModernMatrixServer>>;

  before(async () => {
    up = await startModernMatrixServer({ legacy: 'reject' });
    gw = await startGateway({
      listen: { ssePath: '/sse' },
      upstreams: [{ name: 'm', url: up.url }],
      auth: { apiKeys: API_KEYS },
      sessions: { max: 2 },
      policy: { rateLimits: [{ id: 'one-marker', per: 'key', tools: ['m/modern-fixture-marker'], rate: 1, perSeconds: 3600, burst: 1 }] },
    });
    plain = await startGateway({ upstreams: [{ name: 'm', url: up.url }], auth: { apiKeys: API_KEYS } });
  });
  after(async () => {
    await gw?.close();
    await plain?.close();
    await up?.close();
  });

  test('off by default: without listen.ssePath, GET /sse is 404', async () => {
    const res = await request(sseUrl(plain), { headers: { accept: 'text/event-stream', authorization: `Bearer ${KEY_A}` } });
    assert.equal(res.statusCode, 404);
    await res.body.dump();
  });

  test('the first event is `endpoint`, naming a POST URL on the same origin', async () => {
    const ac = new AbortController();
    const res = await fetch(sseUrl(gw), { headers: { accept: 'text/event-stream', authorization: `Bearer ${KEY_A}` }, signal: ac.signal });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
    assert.match(text, /^event: endpoint\ndata: \/sse\/messages\?session=[A-Za-z0-9_-]{22}\n\n/);
    ac.abort();
  });

  test('a GET without credentials is 401 with a challenge; a credential in the URL is refused', async () => {
    const res = await request(sseUrl(gw), { headers: { accept: 'text/event-stream' } });
    assert.equal(res.statusCode, 401);
    assert.match(String(res.headers['www-authenticate']), /^Bearer/);
    await res.body.dump();
    const inUrl = await request(`${sseUrl(gw).href}?access_token=${KEY_A}`, { headers: { accept: 'text/event-stream' } });
    assert.equal(inUrl.statusCode, 400);
    await inUrl.body.dump();
  });

  test('a foreign Origin is refused (403) before anything else', async () => {
    const res = await request(sseUrl(gw), { headers: { accept: 'text/event-stream', authorization: `Bearer ${KEY_A}`, origin: 'https://evil.example' } });
    assert.equal(res.statusCode, 403);
    await res.body.dump();
  });

  test('a JSON-RPC batch on the message endpoint is refused with 400 -32600 (2024-11-05 has none); the session goes on', async () => {
    const { client, endpoint } = await connectSse(gw);
    try {
      const res = await postMessage(endpoint, KEY_A, [{ jsonrpc: '2.0', id: 'b1', method: 'ping' }, { jsonrpc: '2.0', id: 'b2', method: 'ping' }]);
      assert.equal(res.statusCode, 400);
      const body = (await res.body.json()) as { error: { code: number; message: string } };
      assert.equal(body.error.code, -32600);
      assert.match(body.error.message, /batches are not supported on the HTTP\+SSE transport/);
      await client.ping();
    } finally {
      await client.close();
    }
  });

  test('a POST to an unknown session id is 404', async () => {
    for (const target of ['/sse/messages?session=nope', '/sse/messages']) {
      const res = await postMessage(new URL(target, gw.origin), KEY_A, { jsonrpc: '2.0', id: 1, method: 'ping' });
      assert.equal(res.statusCode, 404, target);
      assert.equal(((await res.body.json()) as { error: { code: number } }).error.code, -32001);
    }
  });

  test('sessions are bounded by sessions.max: a full table refuses others, and a caller makes room among its own idle ones', async () => {
    const a1 = await connectSse(gw);
    const a2 = await connectSse(gw);
    // Full: the other caller is refused rather than anyone's stream being cut.
    const refused = await request(sseUrl(gw), { headers: { accept: 'text/event-stream', authorization: `Bearer ${KEY_B}` } });
    assert.equal(refused.statusCode, 503);
    assert.ok(refused.headers['retry-after']);
    await refused.body.dump();
    // The owner opening a third ends its own least recently used idle one.
    await a2.client.ping();
    a1.client.onerror = () => {};
    const a3 = await connectSse(gw);
    assert.equal(textOf(await a3.client.callTool({ name: 'echo', arguments: { message: 'third' } })), 'Echo: third');
    const late = await postMessage(a1.endpoint, KEY_A, { jsonrpc: '2.0', id: 'late', method: 'ping' });
    assert.equal(late.statusCode, 404);
    await late.body.dump();
    await a2.client.ping();
    for (const c of [a1, a2, a3]) await c.client.close();
  });

  test('policy applies to each message: a rate limit refuses the second call as a tool result', async () => {
    const { client } = await connectSse(gw);
    try {
      const first = await client.callTool({ name: 'modern-fixture-marker', arguments: {} });
      assert.notEqual(first.isError, true);
      const second = await client.callTool({ name: 'modern-fixture-marker', arguments: {} });
      assert.equal(second.isError, true);
      assert.equal((second.structuredContent as { error: { code: string } }).error.code, 'rate_limited');
    } finally {
      await client.close();
    }
  });

  test('a second initialize on one stream is refused; the session goes on', async () => {
    const { client, endpoint } = await connectSse(gw);
    try {
      const again = await postMessage(endpoint, KEY_A, { jsonrpc: '2.0', id: 'again', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
      assert.equal(again.statusCode, 400);
      await again.body.dump();
      assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { message: 'on' } })), 'Echo: on');
    } finally {
      await client.close();
    }
  });
});
