// One 2024-11-05 SSE connection's stream, over a real socket: the `endpoint` event first, keep-alive
// comments while idle, `message` events, backpressure for one writer and a cut-off for a client that has
// stopped reading while answers pile up; and the headers its messages carry through the pipeline.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { ANONYMOUS } from '../../../src/pipeline/principal.js';
import { SseSession } from '../../../src/edge/sse-session.js';

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

/**
 * A session served to a raw socket that has sent its GET and reads only when the test says so: `keepAliveMs`
 * as SseSession.start takes it. Resolves once the server has made the session.
 */
async function rawClientSession(keepAliveMs?: number): Promise<{ session: SseSession; socket: Socket; close(): Promise<void> }> {
  let session: SseSession | undefined;
  const srv = await serve((req, res) => {
    session = new SseSession('owner', ANONYMOUS, '127.0.0.1', req.headers, res);
    session.start('/sse/messages?session=abc', {}, keepAliveMs);
  });
  const { port } = new URL(srv.url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.write(`GET /sse HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\naccept: text/event-stream\r\n\r\n`);
  const close = async (): Promise<void> => {
    socket.destroy();
    await srv.close();
  };
  for (let i = 0; i < 500 && session === undefined; i++) await new Promise((r) => setTimeout(r, 10));
  if (session === undefined) {
    await close();
    throw new Error('the server made no session for the raw client within 5 s');
  }
  return { session, socket, close };
}

test('the endpoint event comes first, then keep-alive comments and message events', async () => {
  let session: SseSession | undefined;
  const srv = await serve((req, res) => {
    session = new SseSession('owner', ANONYMOUS, '127.0.0.1', req.headers, res);
    session.start('/sse/messages?session=abc', { 'x-test': '1' }, 30);
  });
  const ac = new AbortController();
  try {
    const res = await fetch(srv.url, { signal: ac.signal });
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    assert.equal(res.headers.get('x-accel-buffering'), 'no');
    const reader = res.body!.getReader();
    let text = '';
    while ((text.match(/: keep-alive\n\n/g) ?? []).length < 2) text += new TextDecoder().decode((await reader.read()).value);
    assert.ok(text.startsWith('event: endpoint\ndata: /sse/messages?session=abc\n\n'), text);
    assert.equal(await session!.send('{"jsonrpc":"2.0","method":"notifications/message","params":{}}'), true);
    while (!text.includes('event: message\n')) text += new TextDecoder().decode((await reader.read()).value);
    assert.match(text, /event: message\ndata: \{"jsonrpc":"2.0","method":"notifications\/message","params":\{\}\}\n\n/);
  } finally {
    ac.abort();
    await srv.close();
  }
  // The client went away: the session knows, and writes nothing more.
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(session!.closed, true);
  assert.equal(await session!.send('{}'), false);
});

test('a client that stops reading is cut off once its backlog passes the limit; one writer waits instead', async () => {
  // A raw socket that sends the request and then never reads.
  const { session, socket, close } = await rawClientSession();
  socket.pause();
  try {
    const big = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { data: 'x'.repeat(1024 * 1024) } });
    // One writer: the first send that fills the socket waits for a drain that never comes.
    const first = await Promise.race([session.send(big).then(() => 'returned'), new Promise((r) => setTimeout(() => r('waiting'), 300))]);
    let waited = first === 'waiting';
    for (let i = 0; i < 3 && !waited; i++) waited = (await Promise.race([session.send(big).then(() => 'returned'), new Promise((r) => setTimeout(() => r('waiting'), 300))])) === 'waiting';
    assert.ok(waited, 'a single writer was not held back by a full socket');
    // Many writers at once (concurrent calls of the session): past 8 MiB of backlog the client is cut off.
    const results = await Promise.all(Array.from({ length: 16 }, () => session.send(big)));
    assert.ok(results.includes(false), 'nobody was refused');
    assert.equal(session.closed, true);
  } finally {
    await close();
  }
});

// A message may be larger than the backlog bound (an upstream's may hold up to its maxMessageBytes, 16 MiB
// by default). Until 4 December the keep-alive timer measured the backlog while such a message was still
// draining to a client that read it at its own pace, found it past the bound, and cut the client off in the
// middle of the message: a keep-alive is now left out while bytes are on their way, which keep the stream
// alive themselves.
test('a message larger than the backlog bound, read slowly, reaches the client whole through keep-alive ticks', { timeout: 30_000 }, async () => {
  const { session, socket, close } = await rawClientSession(50);
  let received = 0;
  socket.on('data', (c: Buffer) => (received += c.length));
  try {
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text: 'x'.repeat(16 * 1024 * 1024) } });
    socket.pause();
    const sent = session.send(big);
    // Several keep-alive ticks pass while the client takes nothing; then it reads on.
    await new Promise((r) => setTimeout(r, 400));
    socket.resume();
    assert.equal(await sent, true, 'the send was cut short');
    for (let i = 0; i < 200 && received < big.length; i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(received > big.length, `${received} bytes received of a ${big.length}-character message`);
    assert.equal(session.closed, false);
  } finally {
    await close();
  }
});

// The backlog bound is for a client that stopped reading, not for one still taking a large message: until
// 4 December a second message written while a message larger than the bound was draining (a notification of
// another call, a log message on the session's listen stream) found the backlog past it and cut off a client
// that was reading at its own pace. The bound now counts on top of the largest message still queued.
test('a small message written while one larger than the bound drains waits its turn; the client gets both', { timeout: 30_000 }, async () => {
  const { session, socket, close } = await rawClientSession();
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (c: string) => (text += c));
  try {
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text: 'x'.repeat(12 * 1024 * 1024) } });
    const small = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'meanwhile' } });
    socket.pause();
    const sentBig = session.send(big);
    await new Promise((r) => setTimeout(r, 100));
    const sentSmall = session.send(small);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(session.closed, false, 'the client was cut off');
    socket.resume();
    assert.deepEqual(await Promise.all([sentBig, sentSmall]), [true, true]);
    for (let i = 0; i < 200 && !text.includes('meanwhile'); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(text.includes('"id":1') && text.includes('meanwhile'), `${text.length} characters received`);
  } finally {
    await close();
  }
});

test("a message carries the session's own id and version, never the client's", () => {
  const res = { once() {} } as unknown as ServerResponse;
  const session = new SseSession('owner', ANONYMOUS, '127.0.0.1', {}, res);
  const client = { 'content-type': 'application/json', 'mcp-session-id': 'someone-elses', 'mcp-protocol-version': '2026-07-28', 'last-event-id': '7', traceparent: 't' };
  assert.deepEqual(session.headersFor(client), { 'content-type': 'application/json', accept: 'application/json, text/event-stream', traceparent: 't' });
  session.internalId = 'mine';
  session.version = '2025-06-18';
  assert.deepEqual(session.headersFor(client), {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    traceparent: 't',
    'mcp-session-id': 'mine',
    'mcp-protocol-version': '2025-06-18',
  });
});
