// A 2026-07-28 tool whose output is not a JSON object, served to a 2025-11-25 client. In 2026-07-28 an
// outputSchema "can be any valid JSON Schema 2020-12" and `structuredContent` "can be any JSON value (object,
// array, string, number, boolean, or null)" (schema.json Tool.outputSchema, CallToolResult.structuredContent;
// server/tools.mdx §Structured Content). In 2025-11-25 the outputSchema is "restricted to type: "object" at the
// root level" and `structuredContent` is a JSON object (2025-11-25 schema.json). The v1 SDK's client parses a
// list by that schema, so until 4 December one such tool made a legacy client's whole tools/list fail (a
// ZodError: outputSchema.type expected "object"), through the legacy-client bridge on one upstream and the
// catalog alike: no tool of any upstream could be listed. Now the bridge lists such a tool without its
// outputSchema (the 2025-11-25 client cannot be given it); the tool stays listed, and every other tool keeps
// its schema. The upstream is the v2 SDK's McpServer, the client the v1 SDK's.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { listenLoopback, writeFetchResponse } from '../fixtures/upstreams/node-adapter.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const TIMEOUT_MS = 15_000;

function buildServer(): McpServer {
  const server = new McpServer({ name: 'shapes', version: '1.0.0' });
  server.registerTool('tags', { description: 'Tags, as a list', outputSchema: z.array(z.string()) } as never, (async () => ({ content: [{ type: 'text', text: '["a","b"]' }], structuredContent: ['a', 'b'] })) as never);
  server.registerTool('point', { description: 'A point', outputSchema: z.object({ x: z.number() }) }, async () => ({ content: [{ type: 'text', text: '{"x":1}' }], structuredContent: { x: 1 } }));
  return server;
}

const handler = createMcpHandler(() => buildServer(), { legacy: 'reject' });
const { server: http, port } = await listenLoopback(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks);
  const request = new Request(`http://127.0.0.1:${port}${req.url ?? '/'}`, { method: req.method, headers: req.headers as Record<string, string>, body: body.length > 0 ? new Uint8Array(body) : undefined });
  await writeFetchResponse(res, await handler.fetch(request));
});
const gateways: TestGateway[] = [];
after(async () => {
  for (const gw of gateways) await gw.close();
  await handler.close().catch(() => {});
  http.closeAllConnections();
  await new Promise<void>((r) => http.close(() => r()));
});

const PATHS = {
  'one upstream (the legacy-client bridge)': () => [{ name: 'shapes', url: `http://127.0.0.1:${port}/mcp` }],
  'the catalog (two upstreams)': () => [
    { name: 'shapes', url: `http://127.0.0.1:${port}/mcp` },
    { name: 'again', url: `http://127.0.0.1:${port}/mcp` },
  ],
} as const;

for (const path of Object.keys(PATHS) as Array<keyof typeof PATHS>) {
  describe(`a legacy client of a modern tool whose output is not an object, through ${path}`, () => {
    test('tools/list parses: the tool is listed without its outputSchema, the others with theirs, and they are called', async () => {
      const gw = await startGateway({ audit: { enabled: false }, upstreams: PATHS[path]() });
      gateways.push(gw);
      const client = new Client({ name: 'shapes-legacy', version: '1.0.0' }, { capabilities: {} });
      await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: TIMEOUT_MS });
      try {
        const tools = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools;
        const tags = tools.filter((t) => t.name.endsWith('tags'));
        const points = tools.filter((t) => t.name.endsWith('point'));
        assert.equal(tags.length, path.startsWith('one') ? 1 : 2, JSON.stringify(tools));
        for (const t of tags) assert.equal(t.outputSchema, undefined, 'a 2025-11-25 outputSchema is rooted at type "object": this one cannot be given');
        assert.ok(points.length > 0 && points.every((t) => t.outputSchema?.type === 'object'), 'an object outputSchema is kept');
        // The SDK client checks the result against the outputSchema it listed.
        const point = await client.callTool({ name: points[0]!.name, arguments: {} }, CallToolResultSchema, { timeout: TIMEOUT_MS });
        assert.deepEqual(point.structuredContent, { x: 1 });
      } finally {
        await client.close();
      }
    });
  });
}
