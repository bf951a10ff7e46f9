// A 2025-03-26 batch event split into one `message` event per element (2025-03-26/basic/transports.mdx
// §Sending Messages 6, §Resumability and Redelivery): the event's id goes with its last element, so a client
// resuming after that id has had every message of the batch; anything that is no batch goes on as it came.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseParser } from '../../../src/protocol/sse.js';
import { batchIn, unbatchedRaw } from '../../../src/protocol/sse-batch.js';

function eventOf(raw: string) {
  return new SseParser().push(raw)[0]!;
}

test('a batch event becomes one message event per element, the id on the last, the retry kept', () => {
  const ev = eventOf('id: 7\nretry: 500\nevent: message\ndata: [{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"result":{}}]\n\n');
  const split = new SseParser().push(unbatchedRaw(ev));
  const messages = split.filter((e) => e.data !== undefined);
  assert.deepEqual(messages.map((e) => JSON.parse(e.data!)), [{ jsonrpc: '2.0', method: 'a' }, { jsonrpc: '2.0', id: 1, result: {} }]);
  assert.deepEqual(messages.map((e) => e.id), [undefined, '7']);
  assert.ok(split.some((e) => e.retry === 500));
});

test('anything but a batch goes on as it came: one message, JSON that is no array, another event type', () => {
  for (const raw of ['data: {"jsonrpc":"2.0","method":"a"}\n\n', 'data: [not json\n\n', 'event: other\ndata: [{"jsonrpc":"2.0","method":"a"}]\n\n', ': comment\n\n']) {
    const ev = eventOf(raw);
    assert.equal(batchIn(ev), undefined, raw);
    assert.equal(unbatchedRaw(ev), ev.raw);
  }
});

test('elements that are no JSON-RPC object are left out', () => {
  assert.deepEqual(batchIn(eventOf('data: [1,null,[2],{"jsonrpc":"2.0","method":"a"}]\n\n')), [{ jsonrpc: '2.0', method: 'a' }]);
});
