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
import type { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { connectV1, textOf } from '../helpers/v1-everything.js';
import { startV1SseServer } from '../helpers/v1-sse-server.js';

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
  const pings: number[] = [];
  const server = await startV1SseServer(
    'serial',
    (mcp) => {
      mcp.tool('slow', 'answers after 1.5 s, saying nothing meanwhile', async () => {
        await sleep(1_500);
        return { content: [{ type: 'text', text: 'slow done' }] };
      });
    },
    {
      opened(_req, stream) {
        if (!comments) return;
        const timer = setInterval(() => stream.write(': ping\n\n'), 100);
        stream.on('close', () => clearInterval(timer));
      },
      connected: (transport) => serialize(transport, pings),
    },
  );
  return { ...server, pings };
}

/** Calls `slow` through a gateway in front of `up` with these upstream timeouts; its text, or `error: …`. */
async function callSlow(up: { url: string }, timeouts: { pingMs: number; bodyMs: number }, clientName: string): Promise<{ result: string; logs: TestGateway['logs'] }> {
  const gw = await startGateway({ upstreams: [{ name: 'serial', url: up.url, transport: 'sse', era: 'legacy', timeouts }] });
  try {
    const { client } = await connectV1(gw.url, { name: clientName, timeoutMs: 20_000 });
    try {
      const result = await client.callTool({ name: 'slow', arguments: {} }, undefined, { timeout: 20_000 }).then(
        (r) => textOf(r),
        (err: Error) => `error: ${err.message}`,
      );
      return { result, logs: gw.logs };
    } finally {
      await client.close().catch(() => {});
    }
  } finally {
    await gw.close();
  }
}

test('a server that answers one message at a time keeps its stream through a call longer than its pings wait: the ping is answered after the call, the call succeeds', async () => {
  const up = await serialSdkServer();
  try {
    const { result, logs } = await callSlow(up, { pingMs: 200, bodyMs: 10_000 }, 'sse-serial');
    assert.equal(result, 'slow done');
    assert.ok(up.pings.length >= 1, 'the stream was pinged during the call');
    assert.ok(!logs.some((l) => l['msg'] === 'SSE upstream session ended'), 'the stream was kept');
  } finally {
    await up.close();
  }
});

// timeouts.bodyMs is the "longest silence allowed between two chunks of a response body (SSE streams stay
// alive with comments)": a serial server's stream that carries comments while its call runs is not silent.
// Until 4 December only a message counted, and such a stream was closed after bodyMs of comments.
test('a serial server that keeps its stream alive with comments is not taken for dead during a call longer than bodyMs', async () => {
  const up = await serialSdkServer(true);
  try {
    const { result, logs } = await callSlow(up, { pingMs: 200, bodyMs: 500 }, 'sse-serial-comments');
    assert.equal(result, 'slow done');
    assert.ok(!logs.some((l) => l['msg'] === 'SSE upstream session ended'), 'the stream was kept');
  } finally {
    await up.close();
  }
});
