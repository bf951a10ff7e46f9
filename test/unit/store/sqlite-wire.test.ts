// The SQLite store's messages to and from its writer thread are flat arrays (src/store/sqlite-wire.ts): each
// request and reply must come out as it went in, whatever its number of arguments, and a reply's value
// may be anything the writer returns (the store contract tests run the real writer over it).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeRequests, forEachReply, forEachRequest, type WorkerRequest } from '../../../src/store/sqlite-wire.js';

test('requests go through the flat form as they were, in order, with 0 to many arguments of any kind', () => {
  const requests: WorkerRequest[] = [
    { id: 1, op: 'ping', args: [] },
    { id: 2, op: 'appendAudit', args: ['{"a":1}', 1_733_000_000_000] },
    { id: 3, op: 'putMany', args: [[['putCounter', 'k|1', 2, 3], ['putBucket', 'b', 1.5, 4, 5]]] },
    { id: 4, op: 'readAudit', args: [{ afterSeq: 3, limit: 10 }] },
    { id: 5, op: 'claimIdempotency', args: ['key', 'digest', 'owner', 1000, 60_000] },
    { id: 6, op: 'listApprovals', args: [] },
  ];
  const flat = encodeRequests(requests);
  assert.ok(flat.every((v) => typeof v !== 'object' || Array.isArray(v) || v === null || (v as object).constructor === Object), 'values only');
  const seen: WorkerRequest[] = [];
  forEachRequest(structuredClone(flat), (id, op, args) => seen.push({ id, op, args }));
  assert.deepEqual(seen, requests);
  assert.deepEqual(encodeRequests([]), []);
});

test('replies are read as id, ok and value triples, failures with their message', () => {
  const replies = [1, true, { seq: 7, hash: 'ab' }, 2, false, 'commit failed: disk full', 3, true, undefined, 4, true, [1, 2]];
  const seen: unknown[][] = [];
  forEachReply(structuredClone(replies), (id, ok, value) => seen.push([id, ok, value]));
  assert.deepEqual(seen, [
    [1, true, { seq: 7, hash: 'ab' }],
    [2, false, 'commit failed: disk full'],
    [3, true, undefined],
    [4, true, [1, 2]],
  ]);
});
