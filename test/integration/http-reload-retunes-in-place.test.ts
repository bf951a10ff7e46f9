// A reload that changes only a Streamable HTTP upstream's `timeouts`, `pool` or `maxSessions` keeps the
// running upstream and applies the new values to it: its era verdict, the sessions Gatehouse holds for its
// clients and the calls in flight go on, new calls are timed by the new values, and a changed pool is replaced
// for new requests while the old one drains. Until 5 December such a reload built the upstream anew, and after
// shutdown.graceMs the retired one ended what it held: a legacy client in front of a modern server, whose
// session Gatehouse holds, got 404 and had to initialize again (2025-11-25/basic/transports.mdx §Session
// Management), and an `era: auto` upstream was probed again. A change of `url` still builds a new upstream.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { validateConfigObject } from '../../src/config/load.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startModernServer } from '../fixtures/upstreams/modern-server.js';
import { startV1HttpServer } from '../fixtures/upstreams/v1-http-server.js';

const GRACE_MS = 200;
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

function sqliteStore(): { kind: 'sqlite'; path: string } {
  return { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-http-retune-')), 'gatehouse.db') };
}

/** Reloads with `upstreams`, then waits out the retired config's grace period; returns what the reload kept. */
async function reload(gw: TestGateway, upstreams: unknown[], store: unknown): Promise<unknown> {
  const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, store, upstreams, shutdown: { graceMs: GRACE_MS } }, 'test');
  assert.deepEqual(await gw.gateway.reload(next), []);
  await sleep(GRACE_MS * 3);
  return gw.logs.filter((l) => l.msg === 'config reloaded').at(-1)?.keptUpstreams;
}

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: 'retune', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  cleanups.push(() => client.close());
  return client;
}

test('transport: streamableHttp: a legacy client\'s session that Gatehouse holds in front of a modern server survives a reload of timeouts, pool and maxSessions', { timeout: 30_000 }, async () => {
  const up = await startModernServer();
  cleanups.push(() => up.close());
  const store = sqliteStore();
  const entry = (tunables: Record<string, unknown>) => ({ name: 'modern', url: up.url, transport: 'streamableHttp', era: 'modern', ...tunables });
  const gw = await startGateway({ store, upstreams: [entry({})], shutdown: { graceMs: GRACE_MS } });
  cleanups.push(() => gw.close());
  const client = await connect(gw.url);
  assert.ok(!(await client.callTool({ name: 'echo', arguments: { text: 'one' } })).isError);
  const kept = await reload(gw, [entry({ timeouts: { headersMs: 7_000, bodyMs: 9_000, connectMs: 1_500 }, pool: { connections: 3, keepAliveTimeoutMs: 5_000 }, maxSessions: 4 })], store);
  // On the same session (the SDK client sends its Mcp-Session-Id): no 404.
  const answer = await client.callTool({ name: 'echo', arguments: { text: 'two' } });
  assert.ok(!answer.isError, JSON.stringify(answer));
  assert.deepEqual(kept, ['modern'], 'the reload kept the upstream');
});

test('transport: streamableHttp, era: auto: a call in flight keeps its timeouts across the reload, later calls get the new ones, and the upstream is not probed again', { timeout: 30_000 }, async () => {
  const up = await startV1HttpServer((mcp) => {
    mcp.tool('slow', 'answers after a silence', { ms: z.number() }, async ({ ms }) => {
      await sleep(ms);
      return { content: [{ type: 'text', text: 'done' }] };
    });
    mcp.tool('quick', 'answers at once', async () => ({ content: [{ type: 'text', text: 'quick' }] }));
  });
  cleanups.push(() => up.close());
  const initializes = (): number => up.messages.filter((m) => m.method === 'initialize').length;
  const store = sqliteStore();
  const entry = (tunables: Record<string, unknown>) => ({ name: 'legacy', url: up.url, transport: 'streamableHttp', ...tunables });
  const gw = await startGateway({ store, upstreams: [entry({ timeouts: { headersMs: 10_000, bodyMs: 10_000 } })], shutdown: { graceMs: GRACE_MS } });
  cleanups.push(() => gw.close());
  const client = await connect(gw.url);
  const text = (r: unknown): string => (r as { content: Array<{ text: string }> }).content[0]!.text;
  assert.equal(text(await client.callTool({ name: 'quick', arguments: {} })), 'quick');
  const seen = initializes();
  // A call of 1.5 s goes up under the first limits, and is still running when the reload tightens them.
  const inFlight = client.callTool({ name: 'slow', arguments: { ms: 1_500 } });
  await sleep(300);
  const kept = await reload(gw, [entry({ timeouts: { headersMs: 400, bodyMs: 400 }, pool: { connections: 2 } })], store);
  assert.equal(text(await inFlight), 'done', 'the call in flight kept the limits it went up with');
  assert.deepEqual(kept, ['legacy'], 'the reload kept the upstream');
  // The same session goes on, with no new handshake upstream: the kept upstream still knows its era.
  assert.equal(text(await client.callTool({ name: 'quick', arguments: {} })), 'quick');
  assert.equal(initializes(), seen, 'the upstream was not probed again');
  // A call that goes up now is held to the new limits: 1.5 s of silence is past them.
  await assert.rejects(client.callTool({ name: 'slow', arguments: { ms: 1_500 } }), /did not answer in time/, 'a silence longer than the new limits fails the call');
  assert.equal(text(await client.callTool({ name: 'quick', arguments: {} })), 'quick', 'the session serves on');
});

test('transport: streamableHttp: a reload that changes the url builds a new upstream, which the next call reaches', { timeout: 30_000 }, async () => {
  const first = await startModernServer();
  const second = await startModernServer();
  cleanups.push(() => first.close(), () => second.close());
  const store = sqliteStore();
  const entry = (url: string) => ({ name: 'modern', url, transport: 'streamableHttp', era: 'modern' });
  const gw = await startGateway({ store, upstreams: [entry(first.url)], shutdown: { graceMs: GRACE_MS } });
  cleanups.push(() => gw.close());
  const client = await connect(gw.url);
  assert.ok(!(await client.callTool({ name: 'echo', arguments: { text: 'one' } })).isError);
  const kept = await reload(gw, [entry(second.url)], store);
  assert.equal(kept, undefined, 'the upstream was built anew (the reload names none kept)');
  const before = second.requests.length;
  await client.callTool({ name: 'echo', arguments: { text: 'two' } }).catch(() => undefined);
  assert.ok(second.requests.length > before, 'the new url is where requests go');
});
