// A real v1 SDK server (McpServer over SSEServerTransport, the 2024-11-05 HTTP+SSE transport) on a free
// local port, for tests that put Gatehouse in front of an HTTP+SSE upstream: GET /sse opens a session with a
// new McpServer whose tools `register` adds, POST /message?sessionId=… reaches that session.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';

export async function startV1SseServer(name: string, register: (mcp: McpServer) => void): Promise<{ url: string; close(): Promise<void> }> {
  const transports = new Map<string, SSEServerTransport>();
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET' && url.pathname === '/sse') {
      const mcp = new McpServer({ name, version: '1.0.0' });
      register(mcp);
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
