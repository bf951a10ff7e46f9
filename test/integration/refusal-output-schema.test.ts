// Gatehouse's own refusals of a call to a tool that declares an outputSchema, as real SDK clients read them.
// server/tools.mdx §Output Schema (2025-11-25 and 2026-07-28 alike): "If an output schema is provided:
// Servers MUST provide structured results that conform to this schema." A refusal the model can act on is a
// tool result with `isError: true` (DESIGN.md §2); until 4 December it carried `structuredContent.error =
// { code, message }` whatever the tool declared, which no such tool's schema allows. The v1 SDK's
// Client.callTool checks `structuredContent` against the outputSchema it listed even when `isError` is set,
// so it threw "MCP error -32602: Structured content does not match the tool's output schema", and the model
// never learnt that it was rate limited, or that an approval was pending. Now such a refusal carries no
// `structuredContent`: its `{ code, message }` is in `_meta["dev.gatehouse/error"]` beside Gatehouse's other
// keys, and the reason stays in the text content. A tool without an outputSchema keeps
// `structuredContent.error`. The upstreams are real: the v1 SDK's McpServer (2025-11-25) and the v2 SDK's
// (2026-07-28), each alone (pass-through, bridge) and as catalog members; the clients are the v1 and v2 SDKs',
// over Streamable HTTP, and the v1 SDK's over the 2024-11-05 SSE transport.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { createMcpHandler, McpServer as V2McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { listenLoopback, writeFetchResponse } from '../fixtures/upstreams/node-adapter.js';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { attempt } from '../helpers/tool-call.js';

const TIMEOUT_MS = 15_000;
const ERROR_META = 'dev.gatehouse/error';

interface Result {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

// The same three tools on both SDKs' servers: `point` declares an outputSchema, `plain` does not, and
// `failing` declares one but fails (the server's own isError result, with no structuredContent).
let v1Up: V1HttpServer;
let v2Up: { url: string; close(): Promise<void> };

function v2Server(): V2McpServer {
  const server = new V2McpServer({ name: 'v2-tools', version: '1.0.0' });
  server.registerTool('point', { description: 'A point', outputSchema: z.object({ x: z.number() }) }, async () => ({ content: [{ type: 'text', text: '{"x":1}' }], structuredContent: { x: 1 } }));
  server.registerTool('plain', { description: 'Text only' }, async () => ({ content: [{ type: 'text', text: 'plain' }] }));
  server.registerTool('failing', { description: 'Fails', outputSchema: z.object({ x: z.number() }) }, async () => ({ content: [{ type: 'text', text: 'it broke' }], isError: true }));
  return server;
}

before(async () => {
  v1Up = await startV1HttpServer((server) => {
    server.registerTool('point', { description: 'A point', outputSchema: { x: z.number() } }, async () => ({ content: [{ type: 'text', text: '{"x":1}' }], structuredContent: { x: 1 } }));
    server.registerTool('plain', { description: 'Text only' }, async () => ({ content: [{ type: 'text', text: 'plain' }] }));
    server.registerTool('failing', { description: 'Fails', outputSchema: { x: z.number() } }, async () => ({ content: [{ type: 'text', text: 'it broke' }], isError: true }));
  });
  const handler = createMcpHandler(() => v2Server(), { legacy: 'reject' });
  const { server: http, port } = await listenLoopback(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const request = new Request(`http://127.0.0.1:${port}${req.url ?? '/'}`, { method: req.method, headers: req.headers as Record<string, string>, body: body.length > 0 ? new Uint8Array(body) : undefined });
    await writeFetchResponse(res, await handler.fetch(request));
  });
  v2Up = {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      await handler.close().catch(() => {});
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
});

const gateways: TestGateway[] = [];
after(async () => {
  for (const gw of gateways) await gw.close();
  await v1Up?.close();
  await v2Up?.close();
});

/** One call of each of `point` and `plain` per tool, then rate_limited; `failing` is not limited. */
async function gatewayFor(upstreams: Array<{ name: string; url: string }>): Promise<TestGateway> {
  const gw = await startGateway({
    listen: { ssePath: '/sse' },
    tools: { outputValidation: 'enforce' },
    policy: { rules: [{ id: 'everyone', access: 'allow', tools: ['*'] }], rateLimits: [{ id: 'once', per: 'tool', tools: ['*/point', '*/plain'], rate: 1, perSeconds: 3600, burst: 1 }] },
    upstreams,
  });
  gateways.push(gw);
  return gw;
}

type Caller = (gw: TestGateway, name: string) => Promise<{ result: unknown } | { code: number; message: string }>;

/** The v1 SDK's client: lists the tools (caching their outputSchemas, as Client.callTool uses them), then calls. */
function v1Caller(transport: 'streamable' | 'sse'): Caller {
  return async (gw, name) => {
    const client = new V1Client({ name: 'refusal-v1', version: '1.0.0' });
    await client.connect(transport === 'sse' ? new SSEClientTransport(new URL('/sse', gw.origin)) : new V1Transport(new URL(gw.url)), { timeout: TIMEOUT_MS });
    try {
      await client.listTools(undefined, { timeout: TIMEOUT_MS });
      return await attempt(() => client.callTool({ name, arguments: {} }, undefined, { timeout: TIMEOUT_MS }));
    } finally {
      await client.close();
    }
  };
}

const v2Caller: Caller = async (gw, name) => {
  const client = new V2Client({ name: 'refusal-v2', version: '1.0.0' });
  await client.connect(new V2Transport(new URL(gw.url)), { timeout: TIMEOUT_MS });
  try {
    await client.listTools(undefined, { timeout: TIMEOUT_MS });
    return await attempt(() => client.callTool({ name, arguments: {} }, { timeout: TIMEOUT_MS }));
  } finally {
    await client.close();
  }
};

const UPSTREAMS = {
  'a v1 SDK (2025-11-25) server': () => v1Up.url,
  'a v2 SDK (2026-07-28) server': () => v2Up.url,
} as const;
const SHAPES = { alone: false, 'as a catalog member': true } as const;
const CLIENTS: Record<string, Caller> = { 'the v1 client': v1Caller('streamable'), 'the v2 client': v2Caller, 'the v1 client over HTTP+SSE': v1Caller('sse') };

for (const [upLabel, urlOf] of Object.entries(UPSTREAMS)) {
  for (const [shape, catalog] of Object.entries(SHAPES)) {
    describe(`${upLabel}, ${shape}`, () => {
      const ups = () => (catalog ? [{ name: 'up', url: urlOf() }, { name: 'again', url: urlOf() }] : [{ name: 'up', url: urlOf() }]);
      const named = (tool: string) => (catalog ? `up_${tool}` : tool);

      for (const [clientLabel, call] of Object.entries(CLIENTS)) {
        test(`${clientLabel}: rate_limited on a tool with an outputSchema is a result it reads, the code in _meta, not a thrown -32602`, async () => {
          const gw = await gatewayFor(ups());
          const first = await call(gw, named('point'));
          assert.ok('result' in first, `the first call runs: ${JSON.stringify(first)}`);
          assert.deepEqual((first.result as Result).structuredContent, { x: 1 });
          const second = await call(gw, named('point'));
          assert.ok('result' in second, `tools.mdx §Output Schema: the refusal must not break the client's check of the outputSchema: ${JSON.stringify(second)}`);
          const result = second.result as Result;
          assert.equal(result.isError, true);
          assert.equal(result.structuredContent, undefined, 'no structuredContent the schema does not allow');
          const error = result._meta?.[ERROR_META] as { code?: string; message?: string } | undefined;
          assert.equal(error?.code, 'rate_limited', JSON.stringify(result));
          assert.equal(typeof error?.message, 'string');
          assert.equal(result.content[0]?.text, error?.message, 'the reason stays in the text content');
          assert.equal(typeof result._meta?.['dev.gatehouse/retry_after'], 'number', "Gatehouse's other keys stay beside it");
          assert.equal(typeof result._meta?.['dev.gatehouse/run_id'], 'string', 'and the audit record names it as it does any refusal');
        });
      }

      test('a tool without an outputSchema keeps structuredContent.error (v1 and v2 clients)', async () => {
        const gw = await gatewayFor(ups());
        assert.ok('result' in (await v1Caller('streamable')(gw, named('plain'))));
        for (const call of [v1Caller('streamable'), v2Caller]) {
          const refused = await call(gw, named('plain'));
          assert.ok('result' in refused, JSON.stringify(refused));
          const result = refused.result as Result;
          assert.equal(result.isError, true);
          assert.equal((result.structuredContent?.error as { code?: string } | undefined)?.code, 'rate_limited', JSON.stringify(result));
        }
      });

      test("the server's own isError result for a tool with an outputSchema passes outputValidation enforce unrefused", async () => {
        const gw = await gatewayFor(ups());
        for (const call of [v1Caller('streamable'), v2Caller]) {
          const failed = await call(gw, named('failing'));
          assert.ok('result' in failed, JSON.stringify(failed));
          const result = failed.result as Result;
          assert.equal(result.isError, true);
          assert.equal(result.content[0]?.text, 'it broke', `the tool's own error, not invalid_output: ${JSON.stringify(result)}`);
          assert.equal(result._meta?.[ERROR_META], undefined);
        }
      });
    });
  }
}

describe('invalid_output, the refusal that reproduced this first', () => {
  // The answer as JSON, and as an SSE stream (a progress notification first) which the pass-through relays
  // event by event: the refusal replaces the answer's event there (pipeline/final-answer.ts).
  for (const answer of ['json', 'sse'] as const) {
    test(`a v1 client of a legacy server whose output breaks its schema (enforce) reads invalid_output in _meta (${answer} answer)`, async () => {
      // The v1 SDK's server checks its own output, so this server is a fake that lies on purpose.
      const fake = await startFakeUpstream((req, res, body) => {
        if (req.method === 'DELETE') return void res.writeHead(200).end();
        if (req.method !== 'POST') return void res.writeHead(405).end();
        const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { protocolVersion?: string; _meta?: { progressToken?: unknown } } };
        if (msg.id === undefined) return void res.writeHead(202).end();
        if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: msg.params?.protocolVersion ?? '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'liar', version: '1' } }, { 'mcp-session-id': 'liar-session' });
        if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [{ name: 'point', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] } }] });
        if (msg.method !== 'tools/call') return jsonResult(res, body, {});
        const result = { content: [{ type: 'text', text: '{"x":"one"}' }], structuredContent: { x: 'one' } };
        if (answer === 'json') return jsonResult(res, body, result);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } })}\n\n`);
        setTimeout(() => res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result })}\n\n`), 50);
      });
      try {
        const gw = await gatewayFor([{ name: 'liar', url: fake.url }]);
        const called = await v1Caller('streamable')(gw, 'point');
        assert.ok('result' in called, `tools.mdx §Output Schema: ${JSON.stringify(called)}`);
        const result = called.result as Result;
        assert.equal(result.isError, true);
        assert.equal(result.structuredContent, undefined);
        assert.equal((result._meta?.[ERROR_META] as { code?: string } | undefined)?.code, 'invalid_output', JSON.stringify(result));
        assert.ok(Array.isArray((result._meta?.[ERROR_META] as { errors?: unknown }).errors), 'the details go with the code');
      } finally {
        await fake.close();
      }
    });
  }
});
