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
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { MAX_BUFFERED_BYTES } from '../../src/edge/answer.js';
import { startGateway } from '../helpers/gateway.js';
import { connectV1, textOf } from '../helpers/v1-everything.js';

const BIG = MAX_BUFFERED_BYTES + 2 * 1024 * 1024;

async function sdkSseServer(): Promise<{ url: string; close(): Promise<void> }> {
  const transports = new Map<string, SSEServerTransport>();
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET' && url.pathname === '/sse') {
      const mcp = new McpServer({ name: 'big', version: '1.0.0' });
      mcp.tool('big', 'reports progress, then answers with 10 MiB of text', async (extra) => {
        const token = extra._meta?.progressToken;
        if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } });
        return { content: [{ type: 'text', text: 'b'.repeat(BIG) }] };
      });
      const transport = new SSEServerTransport('/message', res);
      transports.set(transport.sessionId, transport);
      void mcp.connect(transport);
      return;
    }
    const transport = transports.get(url.searchParams.get('sessionId') ?? '');
    if (req.method === 'POST' && transport) return void transport.handlePostMessage(req, res);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
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
