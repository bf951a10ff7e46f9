// How Gatehouse, the client of the upstream's listening stream behind an HTTP+SSE session, comes back to it:
// from its last event id, after the server's `retry` (2025-11-25/basic/transports.mdx §Sending Messages 6:
// "The client MUST respect the retry field, waiting the given number of milliseconds before attempting to
// reconnect"), doubled only after connections that brought nothing new; a stream without event ids cannot be
// resumed at all.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseParser } from '../../../src/protocol/sse.js';
import { ListenCursor } from '../../../src/edge/listen-cursor.js';

function see(cursor: ListenCursor, raw: string): void {
  for (const ev of new SseParser().push(raw)) cursor.see(ev);
}

test('a stream without event ids is not resumed', () => {
  const cursor = new ListenCursor();
  see(cursor, 'data: {"jsonrpc":"2.0","method":"a"}\n\n');
  assert.equal(cursor.resumeAfter(), undefined);
  assert.equal(cursor.lastEventId, undefined);
});

test("the server's retry is the wait, each time a connection brought something new", () => {
  const cursor = new ListenCursor();
  see(cursor, 'id: s::1\nretry: 100\ndata: \n\n');
  assert.equal(cursor.resumeAfter(), 100);
  assert.equal(cursor.lastEventId, 's::1');
  see(cursor, 'id: s::2\ndata: {"jsonrpc":"2.0","method":"a"}\n\n');
  assert.equal(cursor.resumeAfter(), 100);
});

test('connections that bring nothing new double the wait, up to 30 s; news brings it back', () => {
  const cursor = new ListenCursor();
  see(cursor, 'id: s::1\ndata: {"jsonrpc":"2.0","method":"a"}\n\n');
  assert.equal(cursor.resumeAfter(), 1_000);
  assert.equal(cursor.resumeAfter(), 2_000);
  // The same id again is no news.
  see(cursor, 'id: s::1\ndata: \n\n');
  assert.equal(cursor.resumeAfter(), 4_000);
  for (let i = 0; i < 10; i++) cursor.resumeAfter();
  assert.equal(cursor.resumeAfter(), 30_000);
  see(cursor, 'id: s::2\ndata: \n\n');
  assert.equal(cursor.resumeAfter(), 1_000);
  // retry: 0 makes no tight loop.
  see(cursor, 'id: s::3\nretry: 0\ndata: \n\n');
  assert.equal(cursor.resumeAfter(), 50);
});

test('an empty id ends the cursor (WHATWG HTML §9.2.6), and so does a refused resume', () => {
  const cursor = new ListenCursor();
  see(cursor, 'id: s::1\ndata: \n\n');
  see(cursor, 'id\ndata: \n\n');
  assert.equal(cursor.lastEventId, undefined);
  see(cursor, 'id: s::2\ndata: \n\n');
  cursor.forget();
  assert.equal(cursor.resumeAfter(), undefined);
});
