// A 2026-07-28 tool whose output is not a JSON object, served to a 2025-11-25 client. In 2026-07-28 an
// outputSchema "can be any valid JSON Schema 2020-12" and `structuredContent` "can be any JSON value (object,
// array, string, number, boolean, or null)" (schema.json Tool.outputSchema, CallToolResult.structuredContent;
// server/tools.mdx §Structured Content). In 2025-11-25 the outputSchema is "restricted to type: "object" at the
// root level" and `structuredContent` is a JSON object (2025-11-25 schema.json). The v1 SDK's client parses a
// list by that schema, so until 4 December one such tool made a legacy client's whole tools/list fail (a
// ZodError: outputSchema.type expected "object"), through the legacy-client bridge on one upstream and the
// catalog alike: no tool of any upstream could be listed. Now the bridge lists such a tool without its
// outputSchema (the 2025-11-25 client cannot be given it); the tool stays listed, and every other tool keeps
// its schema. Its result, whose structuredContent (a list) no 2025-11-25 CallToolResult can hold, failed the
// client's parse of that result; it now travels in `_meta` (dev.gatehouse/structured_content), checked there
// under `outputValidation: enforce`. The upstream is the v2 SDK's McpServer, the client the v1 SDK's.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { listenLoopback, writeFetchResponse } from '../fixtures/upstreams/node-adapter.js';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { attempt } from '../helpers/tool-call.js';

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
        const tags = tools.filter((t) => /(^|_)tags$/.test(t.name));
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

    test('its result reaches the client in a shape it can read, and is still checked against the outputSchema (enforce)', async () => {
      // 2025-11-25 CallToolResult.structuredContent is an object: the list of tags cannot be put there. It goes
      // in `_meta` under dev.gatehouse/structured_content (DESIGN.md §2: Gatehouse's keys), the text block the
      // server wrote stays, and the output check reads it where it went.
      const gw = await startGateway({ audit: { enabled: false }, tools: { outputValidation: 'enforce' }, upstreams: PATHS[path]() });
      gateways.push(gw);
      const client = new Client({ name: 'shapes-legacy', version: '1.0.0' }, { capabilities: {} });
      await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: TIMEOUT_MS });
      try {
        const names = (await client.listTools(undefined, { timeout: TIMEOUT_MS })).tools.map((t) => t.name);
        const tagsName = names.find((n) => /(^|_)tags$/.test(n))!;
        const tags = await attempt(() => client.request({ method: 'tools/call', params: { name: tagsName, arguments: {} } }, CallToolResultSchema, { timeout: TIMEOUT_MS }));
        assert.ok('result' in tags, `a 2025-11-25 client reads the result: ${JSON.stringify(tags)}`);
        const result = tags.result as { structuredContent?: unknown; content: Array<{ text?: string }>; isError?: boolean; _meta?: Record<string, unknown> };
        assert.equal(result.isError, undefined, `a conforming result is not refused: ${JSON.stringify(result)}`);
        assert.equal(result.structuredContent, undefined);
        assert.deepEqual(result._meta?.['dev.gatehouse/structured_content'], ['a', 'b']);
        assert.equal(result.content[0]?.text, '["a","b"]');
      } finally {
        await client.close();
      }
    });
  });
}

// The v2 SDK's server checks its own output, so output that breaks its schema comes from a fake modern server.
describe('a legacy client of a modern tool whose output is not an object, and breaks its outputSchema', () => {
  test('outputValidation enforce: the output moved to _meta is checked there, and refused', async () => {
    const fake = await startFakeUpstream(
      (_req, res, body) => {
        const msg = JSON.parse(body) as { method: string };
        if (msg.method === 'tools/list') return jsonResult(res, body, { resultType: 'complete', ttlMs: 0, cacheScope: 'public', tools: [{ name: 'tags', inputSchema: { type: 'object' }, outputSchema: { type: 'array', items: { type: 'string' } } }] });
        if (msg.method === 'tools/call') return jsonResult(res, body, { resultType: 'complete', content: [{ type: 'text', text: '[1,2]' }], structuredContent: [1, 2] });
        res.writeHead(404).end();
      },
      { handshake: 'modern' },
    );
    const gw = await startGateway({ audit: { enabled: false }, tools: { outputValidation: 'enforce' }, upstreams: [{ name: 'fake', url: fake.url }] });
    gateways.push(gw);
    const client = new Client({ name: 'shapes-legacy', version: '1.0.0' }, { capabilities: {} });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: TIMEOUT_MS });
      const bad = await client.request({ method: 'tools/call', params: { name: 'tags', arguments: {} } }, CallToolResultSchema, { timeout: TIMEOUT_MS });
      assert.equal(bad.isError, true, JSON.stringify(bad));
      // The refusal of a tool with an outputSchema carries its code in _meta, never a structuredContent the
      // schema does not allow (tools.mdx §Output Schema; refusal-output-schema.test.ts).
      assert.equal(bad.structuredContent, undefined);
      assert.match(JSON.stringify(bad._meta?.['dev.gatehouse/error']), /invalid_output/, `output that breaks its schema is refused: ${JSON.stringify(bad)}`);
    } finally {
      await client.close();
      await fake.close();
    }
  });
});
