// sessionVersionRefusal: a legacy request inside a session is judged under the version its initialize
// negotiated (2025-11-25/basic/transports.mdx §Protocol Version Header: the header is assumed 2025-03-26
// only when the server "has no other way to identify the version").

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sessionVersionRefusal } from '../../../src/protocol/front-door.js';

test('without the header, a message goes on in any session; a batch only in a 2025-03-26 one', () => {
  for (const negotiated of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) assert.equal(sessionVersionRefusal(undefined, negotiated, false), undefined, negotiated);
  assert.equal(sessionVersionRefusal(undefined, '2025-03-26', true), undefined);
  for (const negotiated of ['2025-11-25', '2025-06-18', '2024-11-05']) {
    const refusal = sessionVersionRefusal(undefined, negotiated, true);
    assert.equal(refusal?.status, 400, negotiated);
    assert.equal(refusal?.rpcCode, -32600);
    assert.equal(refusal?.code, 'batch');
    assert.match(refusal?.message ?? '', new RegExp(`negotiated ${negotiated}`));
  }
});

// The header is the client's word, the session's version a SHOULD: the official conformance suite sends
// `2025-03-26` inside sessions that negotiated 2025-11-25, and the front door judges such a request (a
// batch included) under the header, as before.
test("a header, the session's version or another, is taken as sent: nothing here refuses it", () => {
  assert.equal(sessionVersionRefusal('2025-06-18', '2025-06-18', false), undefined);
  assert.equal(sessionVersionRefusal('2025-03-26', '2025-03-26', true), undefined);
  assert.equal(sessionVersionRefusal('2025-03-26', '2025-06-18', true), undefined);
  assert.equal(sessionVersionRefusal(['2025-11-25'], '2025-06-18', false), undefined);
});
