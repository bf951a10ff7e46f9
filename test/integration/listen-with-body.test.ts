// A listening GET that carries a body (RFC 9110 §9.3.1: content in a GET has no defined meaning; the MCP
// transports send none) must still end when its client hangs up. Gatehouse does not read such a body, and a
// request body nobody reads keeps Node from reading the socket any further: the client's hang-up was never
// seen, and the stream, its request and its upstream GET were held for as long as the upstream kept its
// stream open (found by the edge fuzzer: a GET with a 75 KB body, still held after every client had gone).
// The body is now drained and dropped. The upstream is the v1 SDK's server, whose GET stream stays open.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { startPollingServer, type PollingServer } from '../fixtures/upstreams/polling-server.js';

let up: PollingServer;
let gw: TestGateway;
before(async () => {
  up = await startPollingServer();
  gw = await startGateway({ listen: { ssePath: '/sse' }, upstreams: [{ name: 'poll', url: up.url, era: 'legacy' }] });
});
after(async () => {
  await gw?.close();
  await up?.close();
});

/** A session of the upstream's, through the gateway. */
async function openSession(): Promise<string> {
  const init = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'listen-body', version: '1' } }), LEGACY_HEADERS);
  const session = init.headers['mcp-session-id'] as string;
  await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
  return session;
}

/** Sends a GET with `body` on a connection of its own; resolves with the socket and the response's head once it has come. */
function getWithBody(session: string | undefined, body: Buffer, path?: string): Promise<{ socket: net.Socket; head: string }> {
  const url = new URL(gw.url);
  const sessionHeaders = session === undefined ? '' : `mcp-session-id: ${session}\r\nmcp-protocol-version: 2025-11-25\r\n`;
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no response head within 5 s: ${JSON.stringify(seen)}`)), 5_000);
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      const end = seen.indexOf('\r\n\r\n');
      if (end === -1) return;
      clearTimeout(timer);
      socket.removeAllListeners('data');
      resolve({ socket, head: seen.slice(0, end) });
    });
    socket.write(
      `GET ${path ?? url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\naccept: text/event-stream\r\n${sessionHeaders}` +
        `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
    );
    socket.write(body);
  });
}

/** The request line the gateway logs once the call has ended, waited for at most `ms`. */
async function endLine(callId: string, ms: number): Promise<Record<string, unknown> | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const line = gw.logs.find((l) => l.msg === 'request' && l.callId === callId);
    if (line !== undefined || Date.now() > deadline) return line;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Opens a stream with a GET carrying `size` bytes, checks it stays open while its client is there, hangs up,
 * and returns the request line logged for it (undefined when none came within 3 s).
 */
async function hangUpOn(session: string | undefined, size: number, path?: string): Promise<Record<string, unknown> | undefined> {
  const { socket, head } = await getWithBody(session, Buffer.alloc(size, 'x'), path);
  assert.match(head, /^HTTP\/1\.1 200/);
  assert.match(head, /content-type: text\/event-stream/i);
  const callId = /x-gatehouse-call-id: ([^\r\n]+)/i.exec(head)?.[1];
  assert.ok(callId, head);
  // Not ended while the client is there.
  assert.equal(await endLine(callId, 300), undefined);
  socket.destroy();
  return endLine(callId, 3_000);
}

for (const size of [64, 75_532]) {
  test(`a listening GET with a ${size}-byte body ends when its client hangs up`, async () => {
    const line = await hangUpOn(await openSession(), size);
    assert.ok(line, 'the stream ended within 3 s of its client hanging up');
    // A served listening stream its client closes has ended normally (stream-close-outcome.test.ts).
    assert.equal(line.outcome, 'ok');
  });
}

test('an HTTP+SSE (2024-11-05) connection opened with a 75532-byte body ends when its client hangs up', async () => {
  const line = await hangUpOn(undefined, 75_532, '/sse');
  assert.ok(line, 'the connection ended within 3 s of its client hanging up');
});
