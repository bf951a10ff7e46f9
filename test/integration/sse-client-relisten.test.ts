// A client of the 2024-11-05 HTTP+SSE transport hears the server's notifications on its one stream; behind
// it Gatehouse holds the upstream's GET stream as a Streamable HTTP client would. A server may close that
// stream at any time (2025-11-25 basic/transports.mdx §Listening for Messages from the Server), and a client
// opens it again. Until 3 December Gatehouse did not: after the first close the SSE client heard nothing
// more, on a connection that looked healthy.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startPollingServer } from '../fixtures/upstreams/polling-server.js';
import { connectSseClientThroughGateway, type SseClientThroughGateway } from '../helpers/sse-client.js';
import { waitUntil } from '../helpers/stdio-children.js';

test('after the upstream closes its GET stream, the SSE client still hears list changes', async () => {
  const up = await startPollingServer({ retryMs: 100 });
  let sse: SseClientThroughGateway | undefined;
  try {
    sse = await connectSseClientThroughGateway({ name: 'poll', url: up.url }, 'sse-relisten');
    const changes = sse.listChanges;
    assert.ok(await waitUntil(() => up.freshGets === 1, 5_000), 'the listen stream opened');
    await up.toolsChanged();
    assert.ok(await waitUntil(() => changes() === 1, 5_000), 'heard before the close');
    up.closeListenStreams();
    // Opened again (after a second), then the next change arrives.
    assert.ok(await waitUntil(() => up.freshGets + up.resumes.length >= 2, 5_000), 'the listen stream opened again');
    await up.toolsChanged();
    assert.ok(await waitUntil(() => changes() === 2, 5_000), `heard after the close (${changes()})`);
  } finally {
    await sse?.close();
    await up.close();
  }
});
