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

test("the session's own version in the header goes on; another one is refused 400 with both named", () => {
  assert.equal(sessionVersionRefusal('2025-06-18', '2025-06-18', false), undefined);
  assert.equal(sessionVersionRefusal('2025-03-26', '2025-03-26', true), undefined);
  const refusal = sessionVersionRefusal('2025-03-26', '2025-06-18', true);
  assert.deepEqual({ status: refusal?.status, rpcCode: refusal?.rpcCode, code: refusal?.code, data: refusal?.data }, { status: 400, rpcCode: -32600, code: 'version_mismatch', data: { negotiated: '2025-06-18', requested: '2025-03-26' } });
  // Node joins nothing for this header; a repeated one is refused earlier (duplicate-headers.ts), an array is read as its first.
  assert.equal(sessionVersionRefusal(['2025-11-25'], '2025-06-18', false)?.code, 'version_mismatch');
});
