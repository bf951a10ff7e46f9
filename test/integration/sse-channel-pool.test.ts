// An HTTP+SSE (2024-11-05) session has its own connection pool (sse-channel.ts): the GET's stream and the
// POSTs to the announced endpoint. A session that ends on its own (the server closed the stream, refused the
// GET, or never named its endpoint) must give its pool back as stop() does: until 4 December only stop()
// closed it, and stop() did nothing once the session had ended, so every such session left its pool behind,
// with its keep-alive connections held open on the upstream (for as long as the server's Keep-Alive hint
// allows, up to 10 minutes). The server here is a fake that misbehaves on purpose, with a long keep-alive so
// that an idle connection stays unless the client closes it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';
import { createLogger } from '../../src/log/logger.js';
import type { UpstreamCredentials } from '../../src/upstream/credentials.js';
import { SseChannel } from '../../src/upstream/sse-channel.js';

const log = createLogger('error', () => {});
const credentials: UpstreamCredentials = { current: () => ({}), headers: async () => ({}), invalidate() {}, close() {} };
const channel = (url: string): SseChannel => new SseChannel({ upstream: 'sse', url, credentials, connectTimeoutMs: 3_000, openTimeoutMs: 1_000, requestTimeoutMs: 5_000 }, log);
const INIT = { jsonrpc: '2.0' as const, id: 1, method: 'initialize', params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 't', version: '1' } } };

/** A fake SSE server that counts the connections open to it; `onGet` answers the GET, POSTs are answered on the stream. */
async function fakeSse(onGet: (res: ServerResponse, origin: string) => void) {
  const open = new Set<Socket>();
  let stream: ServerResponse | undefined;
  const server = createServer((req, res) => {
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.method === 'GET') {
      stream = res;
      return onGet(res, origin);
    }
    let body = '';
    req.on('data', (c: Buffer) => (body += String(c)));
    req.on('end', () => {
      res.writeHead(202).end();
      const msg = JSON.parse(body) as { id?: unknown };
      if (msg.id !== undefined) stream?.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2024-11-05', capabilities: {}, serverInfo: { name: 'f', version: '1' } } })}\n\n`);
    });
  });
  // Keep-Alive: timeout=600. An idle connection is held until the client closes it.
  server.keepAliveTimeout = 600_000;
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`,
    open,
    endStream: () => stream?.end(),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Waits (bounded) for the server to see no connection from the channel; returns how many remain. */
async function connectionsAfter(open: Set<Socket>, ms: number): Promise<number> {
  const until = Date.now() + ms;
  while (open.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  return open.size;
}

test('a session whose stream the server closed gives back its pool: no connection stays open on the upstream', async () => {
  const fake = await fakeSse((res, origin) => res.writeHead(200, { 'content-type': 'text/event-stream' }).write(`event: endpoint\ndata: ${origin}/message\n\n`));
  try {
    const ch = channel(fake.url);
    const ended = new Promise<string>((r) => (ch.onExit = r));
    await ch.start();
    await ch.request(INIT);
    assert.ok(fake.open.size >= 2, 'the stream and a POST connection were open');
    fake.endStream();
    assert.match(await ended, /the event stream ended/);
    assert.equal(await connectionsAfter(fake.open, 1_500), 0, 'the pool was closed: its idle POST connection too');
    await ch.stop(); // after its end: nothing more to do, and no error
  } finally {
    await fake.close();
  }
});

test('a session whose GET was refused, or that never named its endpoint, gives back its pool too', async () => {
  const refusing = await fakeSse((res) => res.writeHead(503, { 'content-type': 'text/plain' }).end('busy'));
  const mute = await fakeSse((res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': nothing to say\n\n'));
  try {
    await assert.rejects(channel(refusing.url).start(), /answered the SSE GET with HTTP 503/);
    assert.equal(await connectionsAfter(refusing.open, 1_500), 0, 'the refused GET left no connection open');
    await assert.rejects(channel(mute.url).start(), /sent no endpoint event/);
    assert.equal(await connectionsAfter(mute.open, 1_500), 0, 'the stream that named no endpoint left no connection open');
  } finally {
    await refusing.close();
    await mute.close();
  }
});
