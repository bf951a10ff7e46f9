// The pass-through's upstream request through undici's dispatch API, against a real node:http server:
// status, headers and body come through; a call cancelled while it waits stops the upstream request; a
// failure before the headers rejects, one after them reaches the body's consumer.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { Pool } from 'undici';
import { Cancellation } from '../../../src/pipeline/cancellation.js';
import { dispatchRelay } from '../../../src/upstream/dispatch-relay.js';

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ pool: Pool; close(): Promise<void> }> {
  const server = createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 2 });
  return {
    pool,
    close: async () => {
      await pool.destroy();
      server.closeAllConnections();
      server.close();
    },
  };
}

test('the answer: status, headers and the body bytes as sent', async () => {
  const up = await serve((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += String(c)));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' });
      res.write('{"echo":');
      res.end(JSON.stringify(body) + '}');
    });
  });
  try {
    const r = await dispatchRelay(up.pool, { path: '/mcp', method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.from('hi') }, new Cancellation());
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['mcp-session-id'], 's1');
    assert.equal((await r.body.collect()).toString(), '{"echo":"hi"}');
  } finally {
    await up.close();
  }
});

test('a call cancelled while the upstream works stops the upstream request', async () => {
  let upstreamSawClose!: () => void;
  const closed = new Promise<void>((r) => (upstreamSawClose = r));
  const up = await serve((req, res) => {
    req.resume();
    res.on('close', () => upstreamSawClose());
    // never answers
  });
  try {
    const cancel = new Cancellation();
    const pending = dispatchRelay(up.pool, { path: '/mcp', method: 'POST', headers: {}, body: Buffer.from('x') }, cancel);
    setTimeout(() => cancel.cancel(), 50);
    await assert.rejects(pending, (err: Error & { code?: string }) => err.code === 'UND_ERR_ABORTED');
    await closed;
  } finally {
    await up.close();
  }
});

test('a call already cancelled never reaches the upstream', async () => {
  let seen = 0;
  const up = await serve((_req, res) => {
    seen++;
    res.end('{}');
  });
  try {
    const cancel = new Cancellation();
    cancel.cancel();
    await assert.rejects(dispatchRelay(up.pool, { path: '/mcp', method: 'POST', headers: {}, body: Buffer.from('x') }, cancel), (err: Error & { code?: string }) => err.code === 'UND_ERR_ABORTED');
    assert.equal(seen, 0);
  } finally {
    await up.close();
  }
});

test('an upstream that dies mid-body: the consumer hears the failure', async () => {
  const up = await serve((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
    res.write('{"partial":');
    setTimeout(() => res.socket?.destroy(), 20);
  });
  try {
    const r = await dispatchRelay(up.pool, { path: '/mcp', method: 'POST', headers: {}, body: Buffer.from('x') }, new Cancellation());
    await assert.rejects(r.body.collect());
  } finally {
    await up.close();
  }
});

test('an upstream that is not there rejects before any headers', async () => {
  const pool = new Pool('http://127.0.0.1:1', { connections: 1 });
  try {
    await assert.rejects(dispatchRelay(pool, { path: '/mcp', method: 'POST', headers: {}, body: null }, new Cancellation()), (err: Error & { code?: string }) => err.code === 'ECONNREFUSED');
  } finally {
    await pool.destroy();
  }
});
