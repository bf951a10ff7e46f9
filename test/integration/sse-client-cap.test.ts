// One caller's connections on the HTTP+SSE endpoint (listen.ssePath) are bounded by
// sessions.maxSsePerCaller, below sessions.max: a caller holding its bound, idle or busy, cannot fill the
// table and lock every other caller out with 503 session_cap (as it could until 4 December). Past its bound
// the caller's own least recently used idle connection ends; with all of its own busy, only it is refused.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { hashKey } from '../../src/auth/key-hash.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startModernMatrixServer } from '../fixtures/upstreams/modern-matrix-server.js';

const KEY_A = 'gh_ssecap_hog_0123456789abcdefghijklmnopqrs';
const KEY_B = 'gh_ssecap_other_0123456789abcdefghijklmnopq';
const API_KEYS = [
  { id: 'hog', hash: hashKey(KEY_A), scopes: [] },
  { id: 'other', hash: hashKey(KEY_B), scopes: [] },
];

interface Connected {
  client: Client;
  endpoint: URL;
}

/** The v1 SDK's HTTP+SSE client; elicitations it gets wait until `release` is called. */
async function connectSse(gw: TestGateway, key: string, held?: { count: number; waiting: Array<() => void> }): Promise<Connected> {
  const transport = new SSEClientTransport(new URL('/sse', gw.origin), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
  const client = new Client({ name: 'sse-cap-client', version: '1.0.0' }, { capabilities: held ? { elicitation: {} } : {} });
  client.onerror = () => {};
  if (held) {
    client.setRequestHandler(ElicitRequestSchema, async () => {
      held.count++;
      await new Promise<void>((r) => held.waiting.push(r));
      return { action: 'accept', content: { name: 'n', check: true } };
    });
  }
  await client.connect(transport, { timeout: 15_000 });
  return { client, endpoint: (transport as unknown as { _endpoint: URL })._endpoint };
}

async function ping(endpoint: URL, key: string): Promise<number> {
  const res = await request(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'ping' }) });
  await res.body.dump();
  return res.statusCode;
}

async function eventually(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !cond()) await new Promise((r) => setTimeout(r, 25));
  return cond();
}

describe('SSE endpoint: one caller\'s connections are bounded by sessions.maxSsePerCaller', () => {
  let gw: TestGateway;
  let up: Awaited<ReturnType<typeof startModernMatrixServer>>;

  before(async () => {
    up = await startModernMatrixServer({ legacy: 'reject' });
    gw = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ name: 'm', url: up.url }], auth: { apiKeys: API_KEYS }, sessions: { max: 4, maxSsePerCaller: 2 } });
  });
  after(async () => {
    await gw?.close();
    await up?.close();
  });

  test('past its bound a caller\'s own idle connection ends; with its own all busy only it is refused, and others still connect', async () => {
    const held = { count: 0, waiting: [] as Array<() => void> };
    const opened: Connected[] = [];
    try {
      const a1 = await connectSse(gw, KEY_A, held);
      const a2 = await connectSse(gw, KEY_A, held);
      const a3 = await connectSse(gw, KEY_A, held);
      opened.push(a1, a2, a3);
      // The third ended the caller's least recently used idle one, though the table had room.
      assert.equal(await ping(a1.endpoint, KEY_A), 404);
      assert.equal(await ping(a2.endpoint, KEY_A), 202);
      assert.equal(await ping(a3.endpoint, KEY_A), 202);

      // Both of the caller's connections busy: a call waits on the client's answer to an elicitation.
      const calls = [a2, a3].map((c) => c.client.callTool({ name: 'trigger-elicitation-request', arguments: {} }, undefined, { timeout: 30_000 }).catch(() => undefined));
      assert.ok(await eventually(() => held.count === 2, 10_000), `elicitations reached the client: ${held.count}`);
      const refused = await request(new URL('/sse', gw.origin), { headers: { accept: 'text/event-stream', authorization: `Bearer ${KEY_A}` } });
      assert.equal(refused.statusCode, 503);
      assert.ok(refused.headers['retry-after']);
      const body = (await refused.body.json()) as { error: { code: number; message: string; data?: unknown } };
      assert.equal(body.error.code, -32600);
      assert.match(body.error.message, /This caller holds 2 SSE sessions \(sessions\.maxSsePerCaller\), all busy/);
      // Nothing of the caller's was cut to make room.
      assert.equal(held.count, 2);

      // Another caller is unaffected: it gets the rest of the table.
      const b1 = await connectSse(gw, KEY_B);
      const b2 = await connectSse(gw, KEY_B);
      opened.push(b1, b2);
      await b1.client.ping();
      await b2.client.ping();

      for (const release of held.waiting) release();
      await Promise.all(calls);
      await a2.client.ping();
    } finally {
      for (const release of held.waiting) release();
      for (const c of opened) await c.client.close().catch(() => {});
    }
  });
});
