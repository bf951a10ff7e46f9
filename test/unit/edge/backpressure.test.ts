// A write waiting for a client to read: the client that has not read what is queued by the stall limit is
// cut off; one that reads it in time is not. Real sockets on loopback, the client's side paused.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { waitForDrain } from '../../../src/edge/backpressure.js';

async function pair(): Promise<{ server: Socket; client: Socket; close(): void }> {
  let accepted!: (s: Socket) => void;
  const got = new Promise<Socket>((r) => (accepted = r));
  const listener = createServer((s) => accepted(s));
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  const port = (listener.address() as { port: number }).port;
  const client = connect(port, '127.0.0.1');
  client.pause();
  const server = await got;
  return { server, client, close: () => (client.destroy(), server.destroy(), listener.close()) };
}

/** Writes until the socket says it is full (the kernel's buffers too). */
function fill(s: Socket): void {
  const chunk = Buffer.alloc(256 * 1024, 97);
  for (let i = 0; i < 400 && s.write(chunk); i++);
}

test('a client that reads nothing is cut off after the stall limit', { timeout: 10_000 }, async (t) => {
  const { server, close } = await pair();
  try {
    fill(server);
    // The stall limit's timer runs on a mocked clock, moved by hand: a tick short of it the client is still
    // waited for, on the tick it is cut off. Synchronous throughout: no other timer is made on that clock.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let waiting: Promise<void>;
    try {
      waiting = waitForDrain(server, new AbortController().signal, 300);
      t.mock.timers.tick(299);
      assert.equal(server.destroyed, false, 'still waited for a tick before the stall limit');
      t.mock.timers.tick(1);
      assert.equal(server.destroyed, true, 'cut off at the stall limit');
    } finally {
      t.mock.timers.reset();
    }
    await waiting;
  } finally {
    close();
  }
});

test('a client that reads what is queued in time is waited for', async () => {
  const { server, client, close } = await pair();
  try {
    const chunk = Buffer.alloc(16 * 1024, 97);
    for (let i = 0; i < 1024; i++) server.write(chunk);
    client.on('data', () => {});
    setTimeout(() => client.resume(), 100);
    await waitForDrain(server, new AbortController().signal, 2_000);
    assert.equal(server.destroyed, false, 'not cut off');
  } finally {
    close();
  }
});
