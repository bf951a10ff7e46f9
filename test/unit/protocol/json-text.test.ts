// An answer's JSON text is made once: whether it can be written is decided before the answer is recorded
// (pipeline/final-answer.ts), and the edge writes the text made then.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonOf, keepJsonText, writableJson } from '../../../src/protocol/json-text.js';

const deep = JSON.parse('['.repeat(50_000) + ']'.repeat(50_000)) as unknown[];

test('a message too deep for JSON.stringify has no text (undefined), not a thrown RangeError', () => {
  assert.equal(jsonOf(deep), undefined);
  assert.equal(writableJson(deep), undefined);
  assert.equal(jsonOf({ ok: true }), '{"ok":true}');
});

test('writableJson keeps the text it made, and the edge (jsonOf) writes that text, not a new one', () => {
  const message = { jsonrpc: '2.0', id: 1, result: { content: [] as unknown[] } };
  assert.equal(writableJson(message), '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}');
  // Messages must not change once their text is kept; this one does, to show which text is written.
  message.result.content.push('later');
  assert.equal(jsonOf(message), '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}');
  assert.equal(writableJson(message), '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}');
  assert.equal(jsonOf({ ...message }), '{"jsonrpc":"2.0","id":1,"result":{"content":["later"]}}', 'another object is written afresh');
});

test('keepJsonText gives a message the text made another way (the run id spliced in)', () => {
  const message = { result: { _meta: { run: 'r' }, a: 1 } };
  keepJsonText(message, '{"result":{"_meta":{"run":"r"},"a":1}}');
  assert.equal(jsonOf(message), '{"result":{"_meta":{"run":"r"},"a":1}}');
  assert.equal(jsonOf('text'), '"text"', 'not an object: written as it is');
});
