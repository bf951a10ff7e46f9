// A mirrored header sent twice is ambiguous: Node joins the copies with ", ", while a proxy in front may have
// routed on either one. Spec: 2026-07-28/basic/transports/streamable-http.mdx §Server Validation (a server
// that processes the body MUST reject a request whose header values do not match the body, so that
// components relying on different sources of truth cannot disagree) and §Server Behavior for Custom Headers;
// RFC 9110 §5.3 (a field that is not a list is not sent more than once, and only list fields may be joined).
// Upstream: a real v2 SDK server whose tool mirrors its `region` argument as Mcp-Param-Region.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { listenLoopback, writeFetchResponse } from '../fixtures/upstreams/node-adapter.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const calls: string[] = [];
const handler = createMcpHandler(() => {
  const server = new McpServer({ name: 'regional', version: '1.0.0' });
  server.registerTool('query', { description: 'Runs a query in a region', inputSchema: z.object({ region: z.string().meta({ 'x-mcp-header': 'Region' }) }) }, async ({ region }) => {
    calls.push(region);
    return { content: [{ type: 'text', text: `ran in ${region}` }] };
  });
  return server;
}, { legacy: 'reject' });
const { server, port } = await listenLoopback(async (req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
  const request = new Request(`http://127.0.0.1${req.url ?? '/'}`, { method: req.method ?? 'POST', headers, ...(text !== '' ? { body: text } : {}) });
  await writeFetchResponse(res, await handler.fetch(request, text !== '' ? { parsedBody: JSON.parse(text) as unknown } : undefined));
});
const gw = await startGateway({ upstreams: [{ name: 'regional', url: `http://127.0.0.1:${port}/mcp`, era: 'modern' }] });
after(async () => {
  await gw.close();
  await handler.close().catch(() => {});
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

test('the tool mirrors region (control): one Mcp-Param-Region equal to the body passes', async () => {
  const { body, headers } = modernRequest(1, 'tools/call', { name: 'query', arguments: { region: 'us-west1' } });
  const res = await post(gw.url, body, { ...headers, 'mcp-param-region': 'us-west1' });
  assert.equal(res.status, 200, res.text);
  assert.match(res.text, /ran in us-west1/);
});

test('§Server Validation: Mcp-Param-Region sent twice → 400, though the joined copies equal the body; the upstream runs nothing', async () => {
  const before = calls.length;
  const { body, headers } = modernRequest(2, 'tools/call', { name: 'query', arguments: { region: 'us-west1, eu-west1' } });
  // A proxy in front that routed on the first copy sent this to us-west1; the tool would run with both.
  const res = await post(gw.url, body, { ...headers, 'mcp-param-region': ['us-west1', 'eu-west1'] });
  assert.equal(res.status, 400, res.text);
  assert.equal(res.json().error.code, -32600);
  assert.match(res.json().error.message, /mcp-param-region header must appear once/);
  assert.equal(calls.length, before, 'nothing ran upstream');
});

test('an Mcp-Param header Gatehouse does not know, sent twice, is refused as well: no copy can be told to be the one', async () => {
  const { body, headers } = modernRequest(3, 'tools/call', { name: 'query', arguments: { region: 'us-west1' } });
  const res = await post(gw.url, body, { ...headers, 'mcp-param-region': 'us-west1', 'Mcp-Param-Tenant': ['a', 'b'] });
  assert.equal(res.status, 400, res.text);
  assert.match(res.json().error.message, /mcp-param-tenant header must appear once/);
});
