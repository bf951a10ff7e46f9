// Which literals JSON.parse reads otherwise than a server reading numbers exactly would (inexact-numbers.ts):
// integers beyond ±(2^53 − 1) that no double equals, and numbers past the double range; only within the
// arguments, never inside strings, never decimals.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hasInexactNumber } from '../../../src/protocol/inexact-numbers.js';

function judged(text: string): boolean {
  const parsed = JSON.parse(text) as { params?: { arguments?: unknown } };
  return hasInexactNumber(text, parsed.params?.arguments ?? parsed);
}

test('integers no double equals, and numbers past the range, are inexact', () => {
  for (const literal of ['9007199254740993', '-9007199254740993', '12345678901234567891', '1e400', '-1e400', '1' + '0'.repeat(400), '[1, 9007199254740993]']) {
    assert.equal(judged(`{"a":{"b":${literal}}}`), true, literal);
  }
});

test('numbers read exactly, decimals and digits inside strings are not', () => {
  for (const literal of ['0', '-0', '42', '9007199254740991', '9007199254740992', '-9007199254740992', '18014398509481984', '1e21', '1E2', '0.1', '3.14159265358979323846', '1e-400', '"9007199254740993"', '"1e400"', '"a\\"9007199254740993"']) {
    assert.equal(judged(`{"a":{"b":${literal}}}`), false, literal);
  }
});

test('an inexact literal outside the arguments (a request id) does not count', () => {
  assert.equal(judged('{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"t","arguments":{"n":1}}}'), false);
  assert.equal(judged('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"n":9007199254740993}}}'), true);
});
