// The one rule both relays that end a stream at its response follow (upstream/resumable-sse.ts readSseText,
// legacy; upstream/modern-answer-stream.ts scopedEvents, 2026-07-28): what they write for an event they keep.
// WHATWG HTML §9.2.5: a CR alone ends a line, so the parser ends an event at the CR of a final CRLF cut after
// it, and passes the LF on as bytes of their own when it comes. A relay that stops after the response never
// reads that LF, and a client parser that waits after a CR for a possible LF (eventsource-parser, in the v1
// SDK) would never dispatch the answer: the relay writes the LF itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { relayedUpToResponse, SseParser } from '../../../src/protocol/sse.js';

test('the response ending in a CR gets its LF; every other event, and a response ending in LF, goes on as it came', () => {
  const [answer] = new SseParser().push('event: message\r\ndata: {"id":1}\r\n\r');
  assert.equal(answer!.raw, 'event: message\r\ndata: {"id":1}\r\n\r');
  assert.equal(relayedUpToResponse(answer!.raw, true), 'event: message\r\ndata: {"id":1}\r\n\r\n');
  // Not the response: the relay goes on, and the LF comes from the parser as an event of its own.
  assert.equal(relayedUpToResponse(answer!.raw, false), answer!.raw);
  for (const raw of ['data: {"id":1}\n\n', 'data: {"id":1}\r\n\r\n', 'data: {"id":1}\n\r\n']) {
    assert.equal(relayedUpToResponse(raw, true), raw, JSON.stringify(raw));
    assert.equal(relayedUpToResponse(raw, false), raw, JSON.stringify(raw));
  }
  // A blank line `\r\r` ends in a CR too: the LF written after it makes its last CR a CRLF, the same line end.
  assert.equal(relayedUpToResponse('data: 1\r\r', true), 'data: 1\r\r\n');
});
