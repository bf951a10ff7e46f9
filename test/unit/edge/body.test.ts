// Reading a request body once (edge/body.ts): a body the parser already holds whole is taken at once, with
// no timer, listeners or promise; one still arriving is waited for, within the size and time limits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { once } from 'node:events';
import { bodyInBuffer, readBody, type BodyResult } from '../../../src/edge/body.js';

/** A server that reads each body with `readBody` after a turn (as the edge does, after auth) and reports it. */
async function withServer(maxBytes: number, timeoutMs: number, run: (port: number, results: Array<{ sync: boolean; result: BodyResult }>) => Promise<void>): Promise<void> {
  const results: Array<{ sync: boolean; result: BodyResult }> = [];
  const server = createServer((req: IncomingMessage, res) => {
    void (async () => {
      await Promise.resolve();
      const read = readBody(req, maxBytes, timeoutMs);
      const sync = !(read instanceof Promise);
      const result = await read;
      results.push({ sync, result });
      res.setHeader('connection', result.ok ? 'keep-alive' : 'close');
      res.end(result.ok ? `read ${result.body.length}` : result.reason);
    })();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    await run((server.address() as { port: number }).port, results);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

/** Sends raw HTTP/1.1 pieces, `gapMs` apart, and returns everything the server wrote back. */
async function rawExchange(port: number, pieces: string[], gapMs = 0, settleMs = 150): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  // Listened for at once: a server that refuses closes the connection before the client is done.
  const closed = once(socket, 'close');
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  for (const [i, piece] of pieces.entries()) {
    if (i > 0 && gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    socket.write(piece);
  }
  await new Promise((r) => setTimeout(r, settleMs));
  socket.end();
  await closed;
  return received;
}

test('a body that arrived with its headers is returned at once, and the connection serves the next request', async () => {
  await withServer(1024, 1000, async (port, results) => {
    const body = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
    const request = `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
    // Two requests in one packet: the first body must be read exactly, leaving the second request intact.
    const answer = await rawExchange(port, [request + request]);
    assert.equal(answer.match(/HTTP\/1\.1 200/g)?.length, 2, answer);
    assert.equal(results.length, 2);
    for (const r of results) {
      assert.equal(r.sync, true, 'no promise for a body already received');
      assert.ok(r.result.ok);
      assert.equal(r.result.ok && r.result.body.toString(), body);
    }
  });
});

test('a chunked body over the limit is refused, whether it arrived whole or in pieces', async () => {
  await withServer(16, 1000, async (port, results) => {
    const chunked = `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: chunked\r\n\r\n14\r\n${'x'.repeat(20)}\r\n0\r\n\r\n`;
    assert.match(await rawExchange(port, [chunked]), /too_large/);
    // Without a declared length the body is taken at once only if the message is already complete.
    assert.deepEqual(results.at(-1)?.result, { ok: false, reason: 'too_large' });
    const head = `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: chunked\r\n\r\n`;
    assert.match(await rawExchange(port, [head, `a\r\n${'y'.repeat(10)}\r\n`, `a\r\n${'z'.repeat(10)}\r\n0\r\n\r\n`], 40), /too_large/);
    assert.deepEqual(results.at(-1), { sync: false, result: { ok: false, reason: 'too_large' } });
  });
});

test('a declared Content-Length over the limit is refused before anything is read', async () => {
  await withServer(16, 1000, async (port, results) => {
    assert.match(await rawExchange(port, [`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 17\r\n\r\n`]), /too_large/);
    assert.deepEqual(results, [{ sync: true, result: { ok: false, reason: 'too_large' } }]);
  });
});

test('a body still arriving is waited for, and one that takes longer than the limit times out', async () => {
  await withServer(1024, 300, async (port, results) => {
    const head = `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 4\r\n\r\n`;
    assert.match(await rawExchange(port, [head, 'ab', 'cd'], 40), /read 4/);
    assert.equal(results.at(-1)?.sync, false);
    assert.ok(results.at(-1)?.result.ok);
    assert.match(await rawExchange(port, [head, 'ab'], 40, 700), /timeout/);
    assert.deepEqual(results.at(-1), { sync: false, result: { ok: false, reason: 'timeout' } });
  });
});

test('asked for within the request event itself, a body that came with its headers is there one microtask later', async () => {
  // Node's parser pushes such a body only once the 'request' handler returns (the edge reads it there when
  // nothing before it had to wait): bodyInBuffer says so, and readBody waits that one microtask, not for events.
  const body = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
  const seen: Array<{ inBufferAtOnce: boolean; inBufferAfterMicrotask: boolean; result: BodyResult; listeners: number }> = [];
  const server = createServer((req, res) => {
    const inBufferAtOnce = bodyInBuffer(req);
    // Queued before readBody's own microtask, which takes the body out of the buffer.
    let inBufferAfterMicrotask = false;
    void Promise.resolve().then(() => (inBufferAfterMicrotask = bodyInBuffer(req)));
    const read = readBody(req, 1024, 1000);
    // Waiting on the stream would have attached its data and end listeners (and a timer) by now.
    const listeners = req.listenerCount('data') + req.listenerCount('end');
    void (async () => {
      const result = await read;
      seen.push({ inBufferAtOnce, inBufferAfterMicrotask, result, listeners });
      res.end('ok');
    })();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const request = `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
    const answer = await rawExchange((server.address() as { port: number }).port, [request + request]);
    assert.equal(answer.match(/HTTP\/1\.1 200/g)?.length, 2, answer);
    assert.equal(seen.length, 2);
    for (const s of seen) {
      assert.equal(s.inBufferAtOnce, false);
      assert.equal(s.inBufferAfterMicrotask, true);
      assert.ok(s.result.ok);
      assert.equal(s.result.ok && s.result.body.toString(), body);
      assert.equal(s.listeners, 0);
    }
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
