// A config reload keeps a Streamable HTTP upstream (`transport: streamableHttp`, or `auto`, the default)
// whose entry it leaves unchanged, as it keeps stdio and HTTP+SSE ones: the same object serves the new
// configuration, with its era verdict, the sessions Gatehouse holds for its clients and the legacy sessions
// it pooled upstream. Before, every reload that changed anything but the log settings (a rate limit added)
// built it anew, and after shutdown.graceMs the retired one ended what it held:
// - a legacy client in front of a modern server, whose session Gatehouse holds (bridge-legacy-client.ts),
//   got 404 and had to initialize again (2025-11-25/basic/transports.mdx §Session Management: "When a client
//   receives HTTP 404 in response to a request containing an Mcp-Session-Id, it MUST start a new session");
// - an `era: auto` upstream was probed again (another initialize upstream) by the first call after it.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  return { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-http-reload-')), 'gatehouse.db') };
}

/** Reloads with the same upstreams and a rate limit added, then waits out the retired config's grace period. */
async function reloadElsewhere(gw: TestGateway, upstreams: unknown[], store: unknown): Promise<void> {
  const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, store, upstreams, shutdown: { graceMs: GRACE_MS }, policy: { rateLimits: [{ id: 'calls', per: 'key', rate: 1000, perSeconds: 60, burst: 1000 }] } }, 'test');
  assert.deepEqual(await gw.gateway.reload(next), []);
  await new Promise((r) => setTimeout(r, GRACE_MS * 3));
}

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: 'reload', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  cleanups.push(() => client.close());
  return client;
}

for (const transport of ['streamableHttp', 'auto'] as const) {
  test(`transport: ${transport}: a legacy client's session that Gatehouse holds in front of a modern server survives a reload that changes no upstream`, { timeout: 30_000 }, async () => {
    const up = await startModernServer();
    cleanups.push(() => up.close());
    const store = sqliteStore();
    const upstreams = [{ name: 'modern', url: up.url, transport, era: 'modern' }];
    const gw = await startGateway({ store, upstreams, shutdown: { graceMs: GRACE_MS } });
    cleanups.push(() => gw.close());
    const client = await connect(gw.url);
    const before = await client.callTool({ name: 'echo', arguments: { text: 'one' } });
    assert.ok(!before.isError);
    await reloadElsewhere(gw, upstreams, store);
    // On the same session (the SDK client sends its Mcp-Session-Id): no 404.
    const afterReload = await client.callTool({ name: 'echo', arguments: { text: 'two' } });
    assert.ok(!afterReload.isError, JSON.stringify(afterReload));
    assert.deepEqual(gw.logs.find((l) => l.msg === 'config reloaded')?.keptUpstreams, ['modern'], 'the reload says it kept the upstream');
  });
}

test('transport: auto, era: auto: the era verdict and the legacy server\'s sessions survive a reload; no new initialize upstream', { timeout: 30_000 }, async () => {
  const up = await startV1HttpServer((mcp) => mcp.tool('add', 'adds', { a: z.number(), b: z.number() }, async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] })));
  cleanups.push(() => up.close());
  const initializes = (): number => up.messages.filter((m) => m.method === 'initialize').length;
  const store = sqliteStore();
  const upstreams = [{ name: 'legacy', url: up.url }];
  const gw = await startGateway({ store, upstreams, shutdown: { graceMs: GRACE_MS } });
  cleanups.push(() => gw.close());
  const client = await connect(gw.url);
  assert.ok(!(await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } })).isError);
  const seen = initializes();
  assert.ok(seen >= 1);
  await reloadElsewhere(gw, upstreams, store);
  const result = (await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })) as { content: Array<{ text: string }> };
  assert.equal(result.content[0]!.text, '5');
  assert.equal(initializes(), seen, 'the upstream was not probed again: the kept upstream still knows its era');
});
