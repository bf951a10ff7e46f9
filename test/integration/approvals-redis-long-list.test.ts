// A long approvals list in Redis. Approvals, the pointers from each call's binding to its approval, pins and
// MRTR continuations all live under the one `{approvals}` index, each kept days past its deadline (pins ten
// years), so a busy gateway's index reaches six figures. Reading it once read every document in one MGET
// whose keys were spread into one function call: past about 125,000 entries that overflowed V8's stack
// (RangeError), so listing failed on every try. The list is what the inbox, GET /approvals and `gatehouse
// approvals list` show, and what each call needing a new approval counts the caller's pending ones from
// (approvals.maxPendingPerCaller), so every such call was refused 503 until entries aged out of the index,
// which only a successful list prunes. Real redis-server.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
let store: Store;
before(async () => {
  // Nothing here needs durability: 150,000 writes with fsync on each would take minutes.
  redis = await startRedis({ config: ['appendonly no'] });
  store = openStore({ kind: 'redis', url: redis.url, keyPrefix: 'long-list:', commandTimeoutMs: 20_000 });
});
after(async () => {
  await store.close();
  await redis.stop();
});

test('150,000 approval documents are listed, and those gone from the store pruned from the index', async () => {
  const total = 150_000;
  const doc = (i: number) => JSON.stringify({ id: `ap_${i}`, n: i });
  // In batches, so the test's own writes stay bounded in flight.
  for (let start = 0; start < total; start += 5_000) {
    await Promise.all(Array.from({ length: 5_000 }, (_, k) => store.putApproval(`ap_${start + k}`, doc(start + k), k % 2 === 0 && start === 0 ? 200 : 600_000)));
  }
  // 2,500 of them (the even ones of the first batch) outlive their TTL: the list leaves them out and prunes them.
  await new Promise((r) => setTimeout(r, 400));
  const listed = await store.listApprovals();
  assert.equal(listed.length, total - 2_500);
  assert.ok(listed.includes(doc(total - 1)) && listed.includes(doc(1)) && !listed.includes(doc(0)));
  assert.equal((await store.listApprovals()).length, total - 2_500, 'a second list finds the same');
});
