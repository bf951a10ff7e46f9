// An answer larger than the edge's buffer bound (MAX_BUFFERED_BYTES, 8 MiB), written on an SSE answer stream
// after a progress notification (2025-11-25/basic/transports.mdx §Sending Messages 6: the server may send
// notifications before the response, on an SSE stream). An upstream's message may be as large as its
// maxMessageBytes (16 MiB by default). Until 4 December the edge measured its queue after writing such an
// answer, found it past the bound, and cut off the client it was for at once, however fast it read: the client
// saw its progress, then nothing, and waited for its own timeout. The bound is now judged before a write, as
// the HTTP+SSE endpoint judges it: a slow client may make Gatehouse hold the bound plus one message.
//
// The upstream is the real v1 SDK (McpServer over SSEServerTransport, the 2024-11-05 transport), whose
// answers reach the Streamable HTTP edge as a stream; the client is the real v1 SDK client.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_BUFFERED_BYTES } from '../../src/edge/answer.js';
import { startGateway } from '../helpers/gateway.js';
import { startV1SseServer } from '../helpers/v1-sse-server.js';
import { connectV1, textOf } from '../helpers/v1-everything.js';

const BIG = MAX_BUFFERED_BYTES + 2 * 1024 * 1024;

function sdkSseServer(): Promise<{ url: string; close(): Promise<void> }> {
  return startV1SseServer('big', (mcp) => {
    mcp.tool('big', 'reports progress, then answers with 10 MiB of text', async (extra) => {
      const token = extra._meta?.progressToken;
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } });
      return { content: [{ type: 'text', text: 'b'.repeat(BIG) }] };
    });
  });
}

test('an answer past the edge buffer bound, after a progress notification, reaches the client whole', { timeout: 60_000 }, async () => {
  const up = await sdkSseServer();
  const gw = await startGateway({ upstreams: [{ name: 'big', url: up.url, transport: 'sse', era: 'legacy' }] });
  const { client } = await connectV1(gw.url, { name: 'big-answer', timeoutMs: 20_000 });
  try {
    let progress = 0;
    const got = await client.callTool({ name: 'big', arguments: {} }, undefined, { timeout: 15_000, onprogress: () => progress++ }).then(
      (r) => `${textOf(r).length} characters`,
      (err: Error) => `error: ${err.message.slice(0, 300)}`,
    );
    assert.equal(progress, 1, 'the progress came first, so the answer went on an SSE stream');
    assert.equal(got, `${BIG} characters`);
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
  }
});
