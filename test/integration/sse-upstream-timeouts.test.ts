// A tool call on an upstream of the 2024-11-05 HTTP+SSE transport has the time a Streamable HTTP upstream
// gives it: `timeouts.headersMs` bounds the wait for headers (for SSE, the POST's own), and the whole
// answer is bounded by `callMs` (or the tool's own limit), however long that is (docs/configuration.md).
// Until 3 December an SSE upstream's calls all ended at headersMs (60 s by default): a long-running tool
// that answered after its progress failed there, and behind a Streamable HTTP upstream it succeeded.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { HttpUpstreamConfig } from '../../src/config/types.js';
import { createLogger } from '../../src/log/logger.js';
import { sseSessions } from '../../src/upstream/sse-upstream.js';
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
// for callMs (30 minutes by default), and so did every later call of that session. With the call in flight the
// ping may wait behind it (sse-upstream-serial.test.ts), so the stream is taken for dead once it was silent
// for bodyMs, its ping unanswered.
test('a silent SSE stream is noticed by its unanswered ping (timeouts.pingMs) once silent for bodyMs under a call: the call fails with a retryable error naming it, and the next call goes on a new stream', async () => {
  const up = await stallingSseServer();
  const gw = await startGateway({ upstreams: [{ name: 'st', url: up.url, transport: 'sse', era: 'legacy', timeouts: { pingMs: 300, bodyMs: 1_000 } }] });
  const { client } = await connectV1(gw.url, { name: 'sse-ping', timeoutMs: 20_000 });
  try {
    assert.match(textOf(await client.callTool({ name: 'echo', arguments: {} }, undefined, { timeout: 20_000 })), /^echo from stream/);
    const stalled = await client.callTool({ name: 'stall', arguments: {} }, undefined, { timeout: 20_000 }).then(
      (r) => `result: ${JSON.stringify(r)}`,
      (err: Error) => `error: ${err.message}`,
    );
    // The reason names the rule that ended the stream (bodyMs of silence under a call, its ping unanswered);
    // the call's own limit (callMs, 30 minutes) and the client's (20 s) would have failed it otherwise.
    assert.match(stalled, /stopped answering \(nothing on the stream for 1000 ms with a request in flight, timeouts.bodyMs, and a ping unanswered\)/);
    assert.match(stalled, /"code":"GW_ERR_UPSTREAM_EXITED","retryable":true/);
    const before = up.streams();
    assert.match(textOf(await client.callTool({ name: 'echo', arguments: {} }, undefined, { timeout: 20_000 })), /^echo from stream/);
    assert.ok(up.streams() > before, 'a new stream was opened');
    assert.ok(gw.logs.some((l) => l['msg'] === 'SSE upstream session ended' && /a ping unanswered/.test(String(l['reason']))), 'the end is logged with its reason');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
  }
});

const sseConfig = (timeouts: Partial<HttpUpstreamConfig['timeouts']>, url: string): HttpUpstreamConfig => ({
  name: 'st',
  url,
  transport: 'sse',
  maxSessions: 32,
  era: 'legacy',
  headers: {},
  timeouts: { connectMs: 2_000, headersMs: 60_000, bodyMs: 300_000, pingMs: 30_000, callMs: 1_800_000, tools: {}, ...timeouts },
  pool: { connections: 4, keepAliveTimeoutMs: 30_000 },
  maxMessageBytes: 16 * 1024 * 1024,
  uriPrefixes: [],
});

/**
 * A port where connecting hangs: a listener (another process, stopped with SIGSTOP, so it accepts nothing)
 * whose backlog is full, so the kernel drops further SYNs, as a black-holed host does.
 */
async function hangingPort(): Promise<{ port: number; stop(): void }> {
  const child = spawn(process.execPath, ['-e', "const s = require('node:net').createServer(); s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => { console.log(s.address().port); process.kill(process.pid, 'SIGSTOP'); });"], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
    child.once('exit', () => reject(new Error('the listener exited')));
  });
  const fillers: Socket[] = [];
  for (let i = 0; i < 8; i++) {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => {});
    fillers.push(s);
    const connected = await new Promise<boolean>((r) => {
      const t = setTimeout(() => r(false), 300);
      s.once('connect', () => (clearTimeout(t), r(true)));
    });
    if (!connected) break;
  }
  return {
    port,
    stop: () => {
      for (const s of fillers) s.destroy();
      child.kill('SIGKILL');
    },
  };
}

// Until 4 December an SSE upstream's connectMs was raised to 5 s when lower, silently: it bounded the TCP
// connection, the GET's headers and the `endpoint` event alike, and 2 s (the default) was too short for the
// latter two. The connection now takes connectMs, as documented; the stream's opening takes headersMs.
test("an SSE upstream's connectMs bounds the TCP connection as set, below 5 s too", async () => {
  const hang = await hangingPort();
  try {
    const ch = sseSessions(sseConfig({ connectMs: 300, headersMs: 10_000 }, `http://127.0.0.1:${hang.port}/sse`), createLogger('error', () => {})).channel();
    // The connection's own error names the timeout it was given (undici's ConnectTimeoutError): 300 ms, not 5 s.
    await assert.rejects(ch.start(), (err: Error & { code?: string }) => err.code === 'GW_ERR_UPSTREAM_UNREACHABLE' && /could not be reached for its event stream: .*timeout: 300ms\)/.test(err.message));
  } finally {
    hang.stop();
  }
});

test("an SSE stream's opening (the GET's headers, then its endpoint event) is bounded by headersMs, not by connectMs", async () => {
  let endpointAfterMs: number | undefined;
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': open\n\n');
    if (endpointAfterMs !== undefined) setTimeout(() => res.write('event: endpoint\ndata: /message\n\n'), endpointAfterMs);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`;
  const log = createLogger('error', () => {});
  try {
    // The error names the bound that fired: headersMs (1000 ms), not connectMs (100 ms).
    await assert.rejects(sseSessions(sseConfig({ connectMs: 100, headersMs: 1_000 }, url), log).channel().start(), /sent no endpoint event within 1000 ms/);
    endpointAfterMs = 500;
    const ch = sseSessions(sseConfig({ connectMs: 100, headersMs: 5_000 }, url), log).channel();
    await ch.start();
    assert.equal(ch.alive, true);
    await ch.stop();
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
