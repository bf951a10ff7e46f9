// A client of the 2024-11-05 HTTP+SSE transport hears the server's notifications on its one stream; behind
// it Gatehouse holds the upstream's GET stream as a Streamable HTTP client would. A server may close that
// stream at any time (2025-11-25 basic/transports.mdx §Listening for Messages from the Server), and a client
// opens it again. Until 3 December Gatehouse did not: after the first close the SSE client heard nothing
// more, on a connection that looked healthy.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { startPollingServer } from '../fixtures/upstreams/polling-server.js';
import { startGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/stdio-children.js';

test('after the upstream closes its GET stream, the SSE client still hears list changes', async () => {
  const up = await startPollingServer({ retryMs: 100 });
  const gw = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ name: 'poll', url: up.url, era: 'legacy' }] });
  const client = new Client({ name: 'sse-relisten', version: '1' }, { capabilities: {} });
  const seen: string[] = [];
  client.fallbackNotificationHandler = async (n) => void seen.push(n.method);
  const changes = () => seen.filter((m) => m === 'notifications/tools/list_changed').length;
  try {
    await client.connect(new SSEClientTransport(new URL('/sse', gw.origin)), { timeout: 10_000 });
    assert.ok(await waitUntil(() => up.freshGets === 1, 5_000), 'the listen stream opened');
    await up.toolsChanged();
    assert.ok(await waitUntil(() => changes() === 1, 5_000), 'heard before the close');
    up.closeListenStreams();
    // Opened again (after a second), then the next change arrives.
    assert.ok(await waitUntil(() => up.freshGets + up.resumes.length >= 2, 5_000), 'the listen stream opened again');
    await up.toolsChanged();
    assert.ok(await waitUntil(() => changes() === 2, 5_000), `heard after the close (${changes()})`);
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
  }
});
