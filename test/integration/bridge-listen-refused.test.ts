// A legacy client's GET stream, in front of a modern upstream, is fed by an upstream subscriptions/listen
// (GATEWAY-REQUIREMENTS §16.2 "Subscriptions ⇄ GET stream"), opened again when the upstream ends it. An
// upstream may refuse a listen with a JSON-RPC error instead (the v2 SDK server past its `maxSubscriptions`:
// -32603 "Subscription limit reached"). That is no stream to take up again at once: asked again every second
// for as long as the client stays, the upstream refused it every second (2026-07-28 basic/patterns/
// cancellation.mdx §Timeouts and the SSE endpoint's own relisten: back off while it keeps failing).
// Here an HTTP+SSE client holds the one listen the upstream allows; a second one's listen is refused.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { startModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGateway } from '../helpers/gateway.js';

test('a listen the modern upstream refuses is asked again after a pause that doubles, not every second', async () => {
  const up = await startModernServer({ maxSubscriptions: 1 });
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }], listen: { ssePath: '/sse' } });
  const listens = (): number => up.requests.filter((r) => (r.body as { method?: string } | undefined)?.method === 'subscriptions/listen').length;
  const clients: Client[] = [];
  try {
    for (const name of ['first', 'second']) {
      const client = new Client({ name, version: '1' });
      clients.push(client);
      await client.connect(new SSEClientTransport(new URL('/sse', gw.origin)));
      await client.listTools();
      const deadline = Date.now() + 5_000;
      while (listens() < clients.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    }
    // The second session's listen was refused; watch how often it is asked again.
    const refusedAt = listens();
    assert.equal(refusedAt, 2);
    await new Promise((r) => setTimeout(r, 8_000));
    // After 1, 2 and 4 s (then 8): three more in these 8 s. Every second, it was eight.
    const again = listens() - refusedAt;
    assert.ok(again >= 1 && again <= 4, `the refused listen was asked again ${again} times in 8 s`);
    // The first client's listen was never disturbed: still one.
    assert.equal(listensOf(up.requests, 'first'), 1);
  } finally {
    for (const c of clients) await c.close();
    await gw.close();
    await up.close();
  }
});

/** Listens asked on behalf of the client named `client` (its clientInfo). */
function listensOf(requests: Array<{ body: unknown }>, client: string): number {
  return requests.filter((r) => {
    const b = r.body as { method?: string; params?: { _meta?: Record<string, { name?: string }> } } | undefined;
    return b?.method === 'subscriptions/listen' && b.params?._meta?.['io.modelcontextprotocol/clientInfo']?.name === client;
  }).length;
}
