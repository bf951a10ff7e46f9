// A real 2025-11-25 MCP server built with the v1 TypeScript SDK (@modelcontextprotocol/sdk): McpServer +
// StreamableHTTPServerTransport in stateful mode (one transport per session), JSON responses, one `echo`
// tool. This is the usual sessionful wiring from the SDK's documentation, on plain node:http.
//
// Usage: node --import tsx bench/sdk-upstream-legacy.ts [--port N] [--sse on]   (prints one "listening" JSON line)
//   --sse on: answers as SSE streams (the SDK's default), not JSON bodies.

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { announceListening, listenLoopback, parseFlags, readBody, stopOnSignals, TOOL_NAME } from './common.js';

const PATH = '/mcp';
const MAX_SESSIONS = 10_000;
const transports = new Map<string, StreamableHTTPServerTransport>();

function newServer(): McpServer {
  const server = new McpServer({ name: 'bench-sdk-v1-upstream', version: '0.0.0' });
  server.registerTool(TOOL_NAME, { description: 'Echoes its text argument', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  return server;
}

function jsonError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.url !== PATH) return jsonError(res, 404, 'Not found');
  const sessionId = req.headers['mcp-session-id'];
  const existing = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
  if (req.method !== 'POST') {
    // GET (standalone stream) and DELETE (end session) go to the session's transport.
    if (existing === undefined) return jsonError(res, typeof sessionId === 'string' ? 404 : 400, 'Unknown or missing session');
    await existing.handleRequest(req, res);
    return;
  }
  const raw = await readBody(req);
  if (raw === null) return jsonError(res, 413, 'Body too large');
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return jsonError(res, 400, 'Parse error');
  }
  if (existing !== undefined) {
    await existing.handleRequest(req, res, body);
    return;
  }
  if (typeof sessionId === 'string') return jsonError(res, 404, 'Session not found');
  if (!isInitializeRequest(body)) return jsonError(res, 400, 'Bad Request: No valid session ID provided');
  if (transports.size >= MAX_SESSIONS) return jsonError(res, 503, 'Too many sessions');
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: flags.sse !== 'on',
    onsessioninitialized: (id) => {
      transports.set(id, transport);
    },
  });
  transport.onclose = () => {
    if (transport.sessionId !== undefined) transports.delete(transport.sessionId);
  };
  await newServer().connect(transport);
  await transport.handleRequest(req, res, body);
}

const flags = parseFlags(process.argv.slice(2), ['port', 'sse']);
const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  handle(req, res).catch((err: unknown) => {
    process.stderr.write(`sdk-upstream-legacy: ${(err as Error).stack ?? String(err)}\n`);
    if (!res.headersSent) jsonError(res, 500, 'Internal error');
    else res.destroy();
  });
});
stopOnSignals(server, async () => {
  await Promise.allSettled([...transports.values()].map((t) => t.close()));
});
await listenLoopback(server, Number(flags.port ?? 0));
announceListening(server, PATH, 'sdk-upstream-legacy');
