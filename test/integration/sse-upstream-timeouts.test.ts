// A tool call on an upstream of the 2024-11-05 HTTP+SSE transport has the time a Streamable HTTP upstream
// gives it: `timeouts.headersMs` bounds the wait for headers (for SSE, the POST's own), and the whole
// answer is bounded by `callMs` (or the tool's own limit), however long that is (docs/configuration.md).
// Until 3 December an SSE upstream's calls all ended at headersMs (60 s by default): a long-running tool
// that answered after its progress failed there, and behind a Streamable HTTP upstream it succeeded.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startEverythingSse } from '../fixtures/upstreams/everything-http.js';
import { startGateway } from '../helpers/gateway.js';
import { connectV1, textOf } from '../helpers/v1-everything.js';

async function longCall(timeouts: Record<string, unknown>): Promise<string> {
  const up = await startEverythingSse();
  const gw = await startGateway({ upstreams: [{ name: 'ev', url: up.url, transport: 'sse', era: 'legacy', timeouts }] });
  const { client } = await connectV1(gw.url, { name: 'sse-timeouts', timeoutMs: 20_000 });
  try {
    const r = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } }, undefined, { timeout: 20_000, onprogress: () => {}, resetTimeoutOnProgress: true });
    return `ok: ${textOf(r)}`;
  } catch (err) {
    return `error: ${(err as Error).message}`;
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
  }
}

test('a 2 s tool call outlives a headersMs of 1 s on an SSE upstream', async () => {
  assert.match(await longCall({ headersMs: 1_000 }), /^ok: Long running operation completed/);
});

test('callMs and a tool limit still bound it', async () => {
  assert.match(await longCall({ headersMs: 1_000, callMs: 800 }), /^error: /);
  assert.match(await longCall({ headersMs: 10_000, tools: { 'trigger-long-running-operation': 800 } }), /^error: /);
});

/**
 * A 2024-11-05 MCP server over HTTP+SSE, written here so that it can stall: a `stall` tool call leaves its
 * stream silent for good (nothing more on it, pings unanswered, the connection left open), as a server that
 * hung or a network that drops packets without a reset would. Other streams (sessions) still work.
 */
async function stallingSseServer(): Promise<{ url: string; streams: () => number; close(): Promise<void> }> {
  const streams = new Map<string, { res: ServerResponse; stalled: boolean }>();
  let n = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET') {
      const id = String(++n);
      streams.set(id, { res, stalled: false });
      res.writeHead(200, { 'content-type': 'text/event-stream' }).write(`event: endpoint\ndata: /message?sessionId=${id}\n\n`);
      return;
    }
    let body = '';
    req.on('data', (c: Buffer) => (body += String(c)));
    req.on('end', () => {
      res.writeHead(202).end();
      const s = streams.get(url.searchParams.get('sessionId') ?? '');
      const msg = JSON.parse(body) as { id?: string | number; method?: string; params?: { name?: string } };
      if (s === undefined || s.stalled || msg.id === undefined) return;
      const answer = (result: unknown): void => void s.res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result })}\n\n`);
      if (msg.method === 'initialize') answer({ protocolVersion: '2024-11-05', capabilities: { tools: {} }, serverInfo: { name: 'stalling', version: '1' } });
      else if (msg.method === 'ping') answer({});
      else if (msg.method === 'tools/list') answer({ tools: ['stall', 'echo'].map((name) => ({ name, inputSchema: { type: 'object' } })) });
      else if (msg.method === 'tools/call' && msg.params?.name === 'stall') s.stalled = true;
      else if (msg.method === 'tools/call') answer({ content: [{ type: 'text', text: `echo from stream ${url.searchParams.get('sessionId')}` }] });
      else s.res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no' } })}\n\n`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`,
    streams: () => n,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

// Until 4 December a stream gone silent was never noticed (it has no body timeout): the call on it waited
// for callMs (30 minutes by default), and so did every later call of that session.
test('a silent SSE stream is noticed by its unanswered ping (timeouts.pingMs): the call fails at once with a retryable error naming it, and the next call goes on a new stream', async () => {
  const up = await stallingSseServer();
  const gw = await startGateway({ upstreams: [{ name: 'st', url: up.url, transport: 'sse', era: 'legacy', timeouts: { pingMs: 300 } }] });
  const { client } = await connectV1(gw.url, { name: 'sse-ping', timeoutMs: 20_000 });
  try {
    assert.match(textOf(await client.callTool({ name: 'echo', arguments: {} }, undefined, { timeout: 20_000 })), /^echo from stream/);
    const started = Date.now();
    const stalled = await client.callTool({ name: 'stall', arguments: {} }, undefined, { timeout: 20_000 }).then(
      (r) => `result: ${JSON.stringify(r)}`,
      (err: Error) => `error: ${err.message}`,
    );
    assert.match(stalled, /stopped answering \(no answer to a ping within 300 ms, timeouts.pingMs\)/);
    assert.match(stalled, /"code":"GW_ERR_UPSTREAM_EXITED","retryable":true/);
    assert.ok(Date.now() - started < 5_000, `noticed after ${Date.now() - started} ms`);
    const before = up.streams();
    assert.match(textOf(await client.callTool({ name: 'echo', arguments: {} }, undefined, { timeout: 20_000 })), /^echo from stream/);
    assert.ok(up.streams() > before, 'a new stream was opened');
    assert.ok(gw.logs.some((l) => l['msg'] === 'SSE upstream session ended' && /no answer to a ping/.test(String(l['reason']))), 'the end is logged with its reason');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
  }
});
