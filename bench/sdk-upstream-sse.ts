// A 2024-11-05 MCP server on the HTTP+SSE transport, built with the v1 TypeScript SDK's SSEServerTransport:
// `GET /sse` opens a session's event stream, whose `endpoint` event names `/message?sessionId=…`; POSTs
// there are answered 202 and the answer comes on the stream. One `echo` tool, as the other bench upstreams.
// Gatehouse reaches it with transport: auto (the default), which finds the SSE transport.
//
// Usage: node --import tsx bench/sdk-upstream-sse.ts [--port N]   (prints one "listening" JSON line)

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { z } from 'zod';
import { announceListening, listenLoopback, parseFlags, readBody, stopOnSignals, TOOL_NAME } from './common.js';

const PATH = '/sse';
const MAX_SESSIONS = 10_000;
const transports = new Map<string, SSEServerTransport>();

function newServer(): McpServer {
  const server = new McpServer({ name: 'bench-sdk-sse-upstream', version: '0.0.0' });
  server.registerTool(TOOL_NAME, { description: 'Echoes its text argument', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  return server;
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  if (req.method === 'GET' && url.pathname === PATH) {
    if (transports.size >= MAX_SESSIONS) return void res.writeHead(503).end('Too many sessions');
    const transport = new SSEServerTransport('/message', res);
    transports.set(transport.sessionId, transport);
    transport.onclose = () => transports.delete(transport.sessionId);
    await newServer().connect(transport);
    return;
  }
  if (req.method === 'POST' && url.pathname === '/message') {
    const transport = transports.get(url.searchParams.get('sessionId') ?? '');
    if (transport === undefined) return void res.writeHead(404).end('Unknown session');
    const raw = await readBody(req);
    if (raw === null) return void res.writeHead(413).end('Body too large');
    await transport.handlePostMessage(req, res, JSON.parse(raw.toString('utf8')));
    return;
  }
  res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
}

const flags = parseFlags(process.argv.slice(2), ['port']);
const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  handle(req, res).catch((err: unknown) => {
    process.stderr.write(`sdk-upstream-sse: ${(err as Error).stack ?? String(err)}\n`);
    if (!res.headersSent) res.writeHead(500).end();
    else res.destroy();
  });
});
stopOnSignals(server, async () => {
  await Promise.allSettled([...transports.values()].map((t) => t.close()));
});
await listenLoopback(server, Number(flags.port ?? 0));
announceListening(server, PATH, 'sdk-upstream-sse');
