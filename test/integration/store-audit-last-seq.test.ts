// Store.auditLastSeq, on both stores (what `gatehouse audit tail` follows from): 0 for an empty log, the
// last record's place after appends, the anchor's seq once retention has removed every record.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../../src/store/store.js';
import { onBothStores } from '../helpers/both-stores.js';

function contract(open: () => Store, reset: () => Promise<void>): void {
  test('0 when empty, the last record after appends, the anchor once every record is pruned', async () => {
    await reset();
    const store = open();
    try {
      assert.equal(await store.auditLastSeq(), 0);
      const old = Date.now() - 10 * 86_400_000;
      for (let i = 1; i <= 7; i++) await store.appendAudit({ time: new Date(old + i).toISOString(), callId: `c${i}`, runId: `r${i}`, subject: 'alice', method: 'tools/call', tool: 'lookup', outcome: 'ok', latencyMs: 1 });
      assert.equal(await store.auditLastSeq(), 7);
      assert.equal(await store.pruneAudit(Date.now()), 7);
      assert.equal((await store.readAudit({})).length, 0);
      assert.equal(await store.auditLastSeq(), 7);
    } finally {
      await store.close();
    }
  });
}

onBothStores({ tmpPrefix: 'gatehouse-last-seq-', keyPrefix: 'last:' }, contract);
