// An HTTP+SSE (2024-11-05) server that forgets a session while its event stream stays open: a server whose
// sessions expire, or one restarted behind a proxy that holds the client's stream. Its message endpoint then
// answers 404, as the SDKs' SSE servers do for a session they do not know ("Session not found"). Over
// Streamable HTTP a 404 for a session means it has ended and the client starts a new one (2025-11-25
// basic/transports.mdx §Session Management 4); the legacy-client bridge opens a new session on it
// (bridge-modern-client.ts). Until 5 December the SSE channel took the 404 as a refusal of that one message:
// the stream stayed open, every later call on the session failed the same way, and the session was never
// opened again. The 404 now ends the session as a dropped stream does, and the session is opened again (its
// initialize replayed); the call the 404 refused, which the server never took, is sent again on it, once.
//
// The server is the real v1 SDK (McpServer over SSEServerTransport).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { z } from 'zod';
import { startGateway } from '../helpers/gateway.js';
import { connectV1, textOf } from '../helpers/v1-everything.js';

/** An SDK SSE server whose `forget()` drops every session it holds, their streams left open. */
async function forgetfulServer(): Promise<{ url: string; gets: () => number; forget(): void; close(): Promise<void> }> {
  const transports = new Map<string, SSEServerTransport>();
  let gets = 0;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET' && url.pathname === '/sse') {
      gets++;
      const mcp = new McpServer({ name: 'forgetful', version: '1.0.0' });
      mcp.tool('echo', 'echoes', { message: z.string() }, async ({ message }) => ({ content: [{ type: 'text', text: `Echo: ${message}` }] }));
      const transport = new SSEServerTransport('/message', res);
      transports.set(transport.sessionId, transport);
      void mcp.connect(transport);
      return;
    }
    const transport = transports.get(url.searchParams.get('sessionId') ?? '');
    if (req.method === 'POST' && transport) return void transport.handlePostMessage(req, res);
    res.writeHead(404).end('Session not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`,
    gets: () => gets,
    forget: () => transports.clear(),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

test('a message endpoint that answers 404 while the stream stays open ends the session: the refused call is sent again on a new session, and so are the calls after it', async () => {
  const up = await forgetfulServer();
  const gw = await startGateway({ upstreams: [{ name: 'forgetful', url: up.url, transport: 'sse', era: 'legacy' }] });
  const { client } = await connectV1(gw.url, { name: 'sse-session-lost', timeoutMs: 10_000 });
  const call = (message: string): Promise<string> =>
    client.callTool({ name: 'echo', arguments: { message } }, undefined, { timeout: 10_000 }).then(
      (r) => textOf(r),
      (err: Error) => `error: ${err.message}`,
    );
  try {
    assert.equal(await call('before'), 'Echo: before');
    const streams = up.gets();
    up.forget();
    // The call the 404 refused never reached the server: it is sent again, once, on the session opened
    // again (after the restart's first delay, 250 ms), as the legacy-client bridge sends a request again.
    assert.equal(await call('refused'), 'Echo: refused');
    assert.equal(await call('after'), 'Echo: after');
    assert.ok(up.gets() > streams, 'a new event stream was opened');
    assert.ok(gw.logs.some((l) => l['msg'] === 'SSE upstream session ended' && /404/.test(String(l['reason']))), 'the end was logged with its reason');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
  }
});
