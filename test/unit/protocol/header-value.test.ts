// Value encoding of mirrored headers (2026-07-28/basic/transports/streamable-http.mdx §Value Encoding),
// using the spec's own examples.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeHeaderValue, encodeHeaderValue } from '../../../src/protocol/header-value.js';

const EXAMPLES: Array<[string, string]> = [
  ['us-west1', 'us-west1'],
  ['Hello, 世界', '=?base64?SGVsbG8sIOS4lueVjA==?='],
  [' padded ', '=?base64?IHBhZGRlZCA=?='],
  ['line1\nline2', '=?base64?bGluZTEKbGluZTI=?='],
  ['=?base64?literal?=', '=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?='],
];

test('the spec examples encode and decode both ways', () => {
  for (const [value, header] of EXAMPLES) {
    assert.equal(encodeHeaderValue(value), header, value);
    assert.deepEqual(decodeHeaderValue(header), { ok: true, value }, header);
  }
});

test('invalid characters and malformed sentinels are refused; markers are case-sensitive', () => {
  assert.equal(decodeHeaderValue('bad\u0001value').ok, false);
  assert.equal(decodeHeaderValue('caf\u00e9').ok, false);
  assert.equal(decodeHeaderValue('=?base64?!!!!?=').ok, false);
  assert.equal(decodeHeaderValue('=?base64?/w==?=').ok, false, 'decodes to invalid UTF-8');
  assert.deepEqual(decodeHeaderValue('=?BASE64?SGk=?='), { ok: true, value: '=?BASE64?SGk=?=' });
});
