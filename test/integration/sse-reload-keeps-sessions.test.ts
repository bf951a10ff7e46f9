// A config reload keeps an HTTP+SSE (`transport: sse`, 2024-11-05) upstream whose entry it leaves unchanged:
// Gatehouse holds one event stream on the server per client session (sse-upstream.ts, on the stdio session
// machinery), so rebuilding the upstream ended every stream after shutdown.graceMs, and every client's session
// with it (404; 2025-11-25/basic/transports.mdx §Session Management: the client must start a new session).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { validateConfigObject } from '../../src/config/load.js';
import { startGateway } from '../helpers/gateway.js';
import { startV1SseServer } from '../helpers/v1-sse-server.js';

const GRACE_MS = 200;
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('transport: sse: a reload that changes no upstream keeps the event streams, and the clients\' sessions on them', { timeout: 30_000 }, async () => {
  let streams = 0;
  const up = await startV1SseServer('sse-up', (mcp) => {
    const stream = ++streams;
    mcp.tool('stream', 'which of the server\'s event streams answers', async () => ({ content: [{ type: 'text', text: String(stream) }] }));
  });
  cleanups.push(() => up.close());
  const store = { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-sse-reload-')), 'gatehouse.db') };
  const upstreams = [{ name: 'sse', url: up.url, transport: 'sse', era: 'legacy' }];
  const gw = await startGateway({ store, upstreams, shutdown: { graceMs: GRACE_MS } });
  cleanups.push(() => gw.close());
  const client = new Client({ name: 'reload', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  cleanups.push(() => client.close());
  const which = async (): Promise<string> => ((await client.callTool({ name: 'stream', arguments: {} })) as { content: Array<{ text: string }> }).content[0]!.text;
  const before = await which();
  const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, store, upstreams, shutdown: { graceMs: GRACE_MS }, policy: { rateLimits: [{ id: 'calls', per: 'key', rate: 1000, perSeconds: 60, burst: 1000 }] } }, 'test');
  assert.deepEqual(await gw.gateway.reload(next), []);
  await new Promise((r) => setTimeout(r, GRACE_MS * 2));
  assert.equal(await which(), before, 'the session goes on, on the same event stream');
  assert.equal(streams, 1, 'no event stream was opened again');
});
