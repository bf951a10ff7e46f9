// A real v1 SDK server (McpServer over SSEServerTransport, the 2024-11-05 HTTP+SSE transport) on a free
// local port, for tests that put Gatehouse in front of an HTTP+SSE upstream: GET /sse opens a session with a
// new McpServer whose tools `register` adds, POST /message?sessionId=… reaches that session.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';

export interface V1SseServerOptions {
  /**
   * Sees every request first; one it answers itself (a refusal: a bad token) it returns false for, and the
   * server does nothing more with it.
   */
  admit?(req: IncomingMessage, res: ServerResponse): boolean;
  /** A session's event stream has opened (its GET /sse), before its McpServer is connected. */
  opened?(req: IncomingMessage, stream: ServerResponse): void;
  /** A session's McpServer is connected: its transport's handlers are in place and may be wrapped. */
  connected?(transport: SSEServerTransport): void;
}

export async function startV1SseServer(name: string, register: (mcp: McpServer) => void, opts: V1SseServerOptions = {}): Promise<{ url: string; close(): Promise<void> }> {
  const transports = new Map<string, SSEServerTransport>();
  const server: Server = createServer((req, res) => {
    if (opts.admit?.(req, res) === false) return;
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET' && url.pathname === '/sse') {
      const mcp = new McpServer({ name, version: '1.0.0' });
      register(mcp);
      const transport = new SSEServerTransport('/message', res);
      transports.set(transport.sessionId, transport);
      opts.opened?.(req, res);
      void mcp.connect(transport).then(() => opts.connected?.(transport));
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
