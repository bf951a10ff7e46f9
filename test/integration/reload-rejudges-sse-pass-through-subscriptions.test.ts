// A legacy (2025-11-25) client of one HTTP+SSE (2024-11-05) upstream, passed through, across a reload whose
// egress rules now block one of its resource subscriptions. Gatehouse holds an event stream on the server per
// client session (sse-upstream.ts, the stdio perSession machinery), and the server's session holds the
// client's subscriptions. `transport: sse` shares the stdio fix (StdioUpstream.unsubscribeSession);
// `transport: auto`, which finds the server's transport first (detected-transport.ts), answered every such
// request `false` until 5 December, so the server went on watching a URI the new rules block.
// Server: the v1 SDK's McpServer over SSEServerTransport. Client: the v1 SDK's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { validateConfigObject } from '../../src/config/load.js';
import { stubResolver } from '../helpers/egress-judged.js';
import { startGateway } from '../helpers/gateway.js';
import { startV1SseServer } from '../helpers/v1-sse-server.js';

const KEPT = 'test://kept';
/** A fetched scheme's URI, resolving to a public address (EGRESS_DNS): allowed by the default egress rules. */
const PARTNER = 'https://docs.partner.example/a';

for (const transport of ['sse', 'auto'] as const) test(`transport: ${transport}: egress rules that now block a URI a legacy session subscribed to unsubscribe the server's session from it`, { timeout: 60_000 }, async () => {
  const { resolveHost } = stubResolver();
  /** The URIs each server session (event stream) is subscribed to. */
  const sessions: Array<Set<string>> = [];
  const upstream = await startV1SseServer('subs', (mcp) => {
    const subscribed = new Set<string>();
    mcp.server.registerCapabilities({ resources: { subscribe: true } });
    mcp.server.setRequestHandler(SubscribeRequestSchema, async (req) => (subscribed.add(req.params.uri), {}));
    mcp.server.setRequestHandler(UnsubscribeRequestSchema, async (req) => (subscribed.delete(req.params.uri), {}));
    sessions.push(subscribed);
  });
  const upstreams = [{ name: 'subs', url: upstream.url, transport }];
  const gw = await startGateway({ upstreams }, { resolveHost });
  const client = new V1Client({ name: 'subscriber', version: '1' });
  client.onerror = () => {};
  const subscribed = (): string[][] => sessions.filter((s) => s.size > 0).map((s) => [...s].sort());
  try {
    await client.connect(new V1Transport(new URL(gw.url)));
    await client.subscribeResource({ uri: PARTNER });
    await client.subscribeResource({ uri: KEPT });
    assert.deepEqual(subscribed(), [[PARTNER, KEPT].sort()]);

    const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams, policy: { egress: [{ id: 'no-partner', tools: ['*'], deny: { hosts: ['docs.partner.example'] } }] } }, 'test');
    assert.deepEqual(await gw.gateway.reload(next), []);
    assert.deepEqual(gw.logs.filter((l) => l.msg === 'config reloaded').at(-1)?.keptUpstreams, ['subs'], 'the same upstream and event streams, still passed through');
    for (let i = 0; i < 100 && subscribed().some((uris) => uris.includes(PARTNER)); i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(subscribed(), [[KEPT]], 'the server\'s session is unsubscribed from the blocked URI, and only from it');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});
