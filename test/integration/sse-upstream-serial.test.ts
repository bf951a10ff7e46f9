// An HTTP+SSE (2024-11-05) server that takes its messages one at a time, as a server whose message loop
// awaits each handler does (or one whose synchronous tool blocks its event loop): a `ping` sent during a
// long call is answered in its turn, after the call. Nothing in JSON-RPC or the 2024-11-05 transport makes a
// server answer out of order, and basic/utilities/ping.mdx asks for a prompt answer, not one ahead of the
// requests before it. Until 4 December Gatehouse's stream watchdog (`timeouts.pingMs`) took such a server
// for dead: a tool call of more than two to three times pingMs (60 to 90 s by default) that reported no
// progress failed "stopped answering" with a retryable error, the session was torn down, and the client's
// retry failed the same way, however long callMs allowed. While a request sent before the ping is still
// unanswered, the stream may now stay silent for `timeouts.bodyMs` (the silence a Streamable HTTP answer
// may keep) before it is taken for dead.
//
// The server is the real v1 SDK (McpServer over SSEServerTransport), with its transport's messages handed
// to the SDK one at a time: the next only once the answer to the last was sent.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { startGateway } from '../helpers/gateway.js';
import { connectV1, textOf } from '../helpers/v1-everything.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Hands `transport`'s incoming messages to its handler one at a time: a request's successor waits for its answer. */
function serialize(transport: SSEServerTransport, pings: number[]): void {
  const handle = transport.onmessage!;
  const send = transport.send.bind(transport);
  const answered = new Map<unknown, () => void>();
  transport.send = async (msg: JSONRPCMessage) => {
    await send(msg);
    if ('id' in msg && !('method' in msg)) answered.get(msg.id)?.();
  };
  let queue = Promise.resolve();
  transport.onmessage = (msg: JSONRPCMessage, extra) => {
    queue = queue.then(async () => {
      if (!('id' in msg) || !('method' in msg)) return handle(msg, extra);
      if (msg.method === 'ping') pings.push(Date.now());
      const done = new Promise<void>((r) => answered.set(msg.id, r));
      handle(msg, extra);
      await done;
      answered.delete(msg.id);
    });
  };
}

/**
 * `comments`: the stream also carries an SSE comment every 100 ms, as servers built on sse-starlette (the
 * Python SDK's) write `: ping` every 15 s, so that proxies keep the stream open.
 */
async function serialSdkServer(comments = false): Promise<{ url: string; pings: number[]; close(): Promise<void> }> {
  const transports = new Map<string, SSEServerTransport>();
  const pings: number[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET' && url.pathname === '/sse') {
      const mcp = new McpServer({ name: 'serial', version: '1.0.0' });
      mcp.tool('slow', 'answers after 1.5 s, saying nothing meanwhile', async () => {
        await sleep(1_500);
        return { content: [{ type: 'text', text: 'slow done' }] };
      });
      const transport = new SSEServerTransport('/message', res);
      transports.set(transport.sessionId, transport);
      if (comments) {
        const timer = setInterval(() => res.write(': ping\n\n'), 100);
        res.on('close', () => clearInterval(timer));
      }
      void mcp.connect(transport).then(() => serialize(transport, pings));
      return;
    }
    const transport = transports.get(url.searchParams.get('sessionId') ?? '');
    if (req.method === 'POST' && transport) return void transport.handlePostMessage(req, res);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`,
    pings,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

test('a server that answers one message at a time keeps its stream through a call longer than its pings wait: the ping is answered after the call, the call succeeds', async () => {
  const up = await serialSdkServer();
  const gw = await startGateway({ upstreams: [{ name: 'serial', url: up.url, transport: 'sse', era: 'legacy', timeouts: { pingMs: 200, bodyMs: 10_000 } }] });
  const { client } = await connectV1(gw.url, { name: 'sse-serial', timeoutMs: 20_000 });
  try {
    const result = await client.callTool({ name: 'slow', arguments: {} }, undefined, { timeout: 20_000 }).then(
      (r) => textOf(r),
      (err: Error) => `error: ${err.message}`,
    );
    assert.equal(result, 'slow done');
    assert.ok(up.pings.length >= 1, 'the stream was pinged during the call');
    assert.ok(!gw.logs.some((l) => l['msg'] === 'SSE upstream session ended'), 'the stream was kept');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
  }
});

// timeouts.bodyMs is the "longest silence allowed between two chunks of a response body (SSE streams stay
// alive with comments)": a serial server's stream that carries comments while its call runs is not silent.
// Until 4 December only a message counted, and such a stream was closed after bodyMs of comments.
test('a serial server that keeps its stream alive with comments is not taken for dead during a call longer than bodyMs', async () => {
  const up = await serialSdkServer(true);
  const gw = await startGateway({ upstreams: [{ name: 'serial', url: up.url, transport: 'sse', era: 'legacy', timeouts: { pingMs: 200, bodyMs: 500 } }] });
  const { client } = await connectV1(gw.url, { name: 'sse-serial-comments', timeoutMs: 20_000 });
  try {
    const result = await client.callTool({ name: 'slow', arguments: {} }, undefined, { timeout: 20_000 }).then(
      (r) => textOf(r),
      (err: Error) => `error: ${err.message}`,
    );
    assert.equal(result, 'slow done');
    assert.ok(!gw.logs.some((l) => l['msg'] === 'SSE upstream session ended'), 'the stream was kept');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
  }
});
