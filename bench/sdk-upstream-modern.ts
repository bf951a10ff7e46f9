// A real 2026-07-28 MCP server built with the v2 TypeScript SDK (@modelcontextprotocol/server):
// `createMcpHandler` with one `echo` tool, modern-only (`legacy: 'reject'`). The handler is fetch-shaped;
// this file adapts node:http to it in a few lines (what `toNodeHandler` from @modelcontextprotocol/node
// does, which is not installed here).
//
// Usage: node --import tsx bench/sdk-upstream-modern.ts [--port N]   (prints one "listening" JSON line)

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { announceListening, listenLoopback, parseFlags, readBody, stopOnSignals, TOOL_NAME } from './common.js';

const PATH = '/mcp';

const handler = createMcpHandler(
  () => {
    const server = new McpServer({ name: 'bench-sdk-v2-upstream', version: '0.0.0' });
    server.registerTool(TOOL_NAME, { description: 'Echoes its text argument', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
      content: [{ type: 'text', text }],
    }));
    return server;
  },
  { legacy: 'reject' },
);

async function handle(req: IncomingMessage, res: ServerResponse, origin: string): Promise<void> {
  const headers = new Headers();
  for (const [key, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(key, value);
    else if (Array.isArray(value)) for (const v of value) headers.append(key, v);
  }
  const method = req.method ?? 'GET';
  let body: Uint8Array<ArrayBuffer> | undefined;
  if (method !== 'GET' && method !== 'HEAD') {
    const raw = await readBody(req);
    if (raw === null) {
      res.writeHead(413).end();
      return;
    }
    body = new Uint8Array(raw.buffer as ArrayBuffer, raw.byteOffset, raw.byteLength);
  }
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  const request = new Request(origin + (req.url ?? '/'), { method, headers, body: body ?? null, signal: abort.signal });
  const response = await handler.fetch(request);
  const outHeaders: Record<string, string> = {};
  response.headers.forEach((v, k) => {
    outHeaders[k] = v;
  });
  res.writeHead(response.status, outHeaders);
  if (response.body === null) {
    res.end();
    return;
  }
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk);
  res.end();
}

const flags = parseFlags(process.argv.slice(2), ['port']);
let origin = 'http://127.0.0.1';
const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  if (req.url !== PATH) {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
    return;
  }
  handle(req, res, origin).catch((err: unknown) => {
    process.stderr.write(`sdk-upstream-modern: ${(err as Error).stack ?? String(err)}\n`);
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"internal"}');
    else res.destroy();
  });
});
stopOnSignals(server, () => handler.close());
await listenLoopback(server, Number(flags.port ?? 0));
origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
announceListening(server, PATH, 'sdk-upstream-modern');
