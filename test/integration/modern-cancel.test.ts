// A modern client cancels by closing its request's stream; the upstream must hear of it in its own terms.
// Spec: 2026-07-28/basic/transports/streamable-http.mdx §Cancellation (closing the SSE response stream MUST
// be treated as cancellation); 2026-07-28/basic/transports/stdio.mdx §Cancellation (on stdio the client MUST
// send notifications/cancelled); 2025-11-25/basic/transports.mdx §Sending Messages 6 (a legacy server does
// not read a disconnect as a cancellation: GATEWAY-REQUIREMENTS §16.1 "Cancellation").
// Upstreams: real SDK servers (v2 modern-only and v1 legacy, over stdio; v1 legacy and v2 modern-only over
// HTTP) whose tool runs until its request is cancelled.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { listenLoopback, writeFetchResponse } from '../fixtures/upstreams/node-adapter.js';
import { startV1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { sleep } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/upstreams/cancel-aware-stdio.mjs', import.meta.url));
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Waits (bounded) for `seen` to hold. */
async function until(seen: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 100 && !seen(); i++) await sleep(50);
  assert.ok(seen(), what);
}

const stderr = (gw: TestGateway, prefix: string): boolean => gw.logs.some((l) => l.msg === 'stdio upstream stderr' && String(l.line).startsWith(prefix));

/** Calls `wait` as a modern client, closes the request once the upstream runs it, and returns. */
async function callThenLeave(gw: TestGateway, started: () => boolean, tool = 'wait'): Promise<void> {
  const { body, headers } = modernRequest(1, 'tools/call', { name: tool, arguments: {} });
  const leave = new AbortController();
  const call = post(gw.url, body, headers, leave.signal).catch((err: Error) => err);
  await until(started, 'the upstream started the call');
  leave.abort();
  assert.ok((await call) instanceof Error, 'the call was still running when the client left');
}

for (const era of ['modern', 'legacy'] as const) {
  test(`stdio.mdx §Cancellation: a modern client that closes its stream → the ${era} stdio server gets notifications/cancelled`, async () => {
    const gw = await startGateway({ upstreams: [{ name: 'waiter', command: [process.execPath, FIXTURE, era], era }] });
    cleanups.push(() => gw.close());
    await callThenLeave(gw, () => stderr(gw, 'started'));
    await until(() => stderr(gw, 'cancelled'), 'the server heard the cancellation');
  });
}

test('streamable-http.mdx §Cancellation: a modern client that closes its stream → a legacy HTTP server gets notifications/cancelled', async () => {
  const cancelled: unknown[] = [];
  let started = false;
  const up = await startV1HttpServer((server) => {
    server.registerTool('wait', { description: 'Waits until cancelled' }, async (extra) => {
      started = true;
      await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve(), { once: true }));
      cancelled.push(extra.requestId);
      return { content: [] };
    });
  });
  cleanups.push(() => up.close());
  const gw = await startGateway({ upstreams: [{ name: 'waiter', url: up.url, era: 'legacy' }] });
  cleanups.push(() => gw.close());
  await callThenLeave(gw, () => started);
  await until(() => cancelled.length === 1, 'the server heard the cancellation');
  assert.ok(up.messages.some((m) => m.method === 'notifications/cancelled'), 'as notifications/cancelled');
});

test('stdio.mdx §Cancellation, through the catalog: a modern client that closes its stream → the member (modern, then legacy) gets notifications/cancelled', async () => {
  const gw = await startGateway({ upstreams: [{ name: 'modern', command: [process.execPath, FIXTURE, 'modern'], era: 'modern' }, { name: 'legacy', command: [process.execPath, FIXTURE, 'legacy'], era: 'legacy' }] });
  cleanups.push(() => gw.close());
  const lines = (prefix: string): number => gw.logs.filter((l) => l.msg === 'stdio upstream stderr' && String(l.line).startsWith(prefix)).length;
  for (const [n, member] of [[1, 'modern'], [2, 'legacy']] as const) {
    await callThenLeave(gw, () => lines('started') === n, `${member}_wait`);
    await until(() => lines('cancelled') === n, `the ${member} member heard the cancellation`);
  }
});

test('streamable-http.mdx §Cancellation: a modern client that closes its stream → the modern HTTP server\'s request is closed too (pass-through and catalog)', async () => {
  let started = 0;
  let aborted = 0;
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'waiter', version: '1.0.0' });
    server.registerTool('wait', { description: 'Waits until cancelled', inputSchema: z.object({}) }, async (_args, ctx) => {
      started++;
      await new Promise<void>((resolve) => ctx.mcpReq.signal.addEventListener('abort', () => resolve(), { once: true }));
      aborted++;
      return { content: [] };
    });
    return server;
  }, { legacy: 'reject' });
  const { server, port } = await listenLoopback(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    // The request's signal is the HTTP request's life: a closed connection aborts the handler.
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
    const request = new Request(`http://127.0.0.1${req.url ?? '/'}`, { method: req.method ?? 'POST', headers, ...(text !== '' ? { body: text } : {}), signal: gone.signal });
    await writeFetchResponse(res, await handler.fetch(request, text !== '' ? { parsedBody: JSON.parse(text) as unknown } : undefined));
  });
  cleanups.push(async () => {
    await handler.close().catch(() => {});
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  const url = `http://127.0.0.1:${port}/mcp`;
  const alone = await startGateway({ upstreams: [{ name: 'waiter', url, era: 'modern' }] });
  cleanups.push(() => alone.close());
  const catalog = await startGateway({ upstreams: [{ name: 'waiter', url, era: 'modern' }, { name: 'other', url, era: 'modern' }] });
  cleanups.push(() => catalog.close());
  for (const [n, gw, tool] of [[1, alone, 'wait'], [2, catalog, 'waiter_wait']] as const) {
    await callThenLeave(gw, () => started === n, tool);
    await until(() => aborted === n, 'the server saw its request end');
  }
});
