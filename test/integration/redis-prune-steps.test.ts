// Audit retention on Redis runs at every replica's start and then hourly (audit-trail.ts), and removed
// everything past retention with one command: ZREMRANGEBYSCORE over all of it, in one script (before, one
// MULTI). Redis runs one command at a time, so every replica's every operation waited for it: 200,000
// records held Redis for about 100 ms here, an hour of a gateway at 1,000 calls a second (3.6 million) for
// about 2 s, past store.commandTimeoutMs (2 s by default), so governed calls everywhere were refused (503)
// while it ran; a first prune of a long backlog (retainDays lowered) held it for longer still. It now
// removes in steps of one page, each leaving an anchor the chain verifies from. The test counts the removals
// Redis ran (a time limit on them failed here under load, where Redis itself waits for a core).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { verifyChain } from '../../src/store/audit-chain.js';
import { openStore } from '../../src/store/open-store.js';
import type { AuditEntry } from '../../src/store/store.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
before(async () => {
  // The records need not reach the disk for this test: appending them fast is what matters.
  redis = await startRedis({ config: ['appendfsync no'] });
});
after(async () => {
  await redis.stop();
});

const RECORDS = 200_000;
/** The most records one removal may take: a page (redis-store.ts AUDIT_PRUNE_PAGE). */
const PAGE = 500;

function entry(n: number, time: number): AuditEntry {
  return { time: new Date(time).toISOString(), callId: `call-${n}`, runId: `run-${n}`, subject: 'key:ci', method: 'tools/call', tool: 'echo', toolRef: 'up/echo', outcome: 'ok', latencyMs: 1 };
}

test('retention over 200,000 records never holds Redis for long, and leaves a chain that verifies', { timeout: 120_000 }, async () => {
  const s = openStore({ kind: 'redis', url: redis.url, keyPrefix: 'prune-steps:', commandTimeoutMs: 10_000 });
  const raw = new Redis(redis.url);
  try {
    const old = Date.now() - 40 * 86_400_000;
    for (let i = 0; i < RECORDS; i += 2_000) await Promise.all(Array.from({ length: 2_000 }, (_, j) => s.appendAudit(entry(i + j, old + i + j))));
    for (let i = 0; i < 3; i++) await s.appendAudit(entry(RECORDS + i, Date.now()));
    // Counted, not timed (a wall-clock limit fails on a busy machine): how many removals the prune made.
    // Redis counts the commands a script runs under their own names.
    await raw.config('RESETSTAT');
    assert.equal(await s.pruneAudit(Date.now() - 86_400_000), RECORDS);
    const stats = (await raw.info('commandstats')).match(/^cmdstat_zremrangebyscore:calls=(\d+)/m);
    const removals = Number(stats?.[1] ?? 0);
    assert.ok(removals >= RECORDS / PAGE, `${removals} removals for ${RECORDS} records: at most ${PAGE} records each`);
    const anchor = await s.auditAnchor();
    assert.equal(anchor?.seq, RECORDS);
    const left = await s.readAudit({});
    assert.deepEqual(left.map((r) => r.seq), [RECORDS + 1, RECORDS + 2, RECORDS + 3]);
    assert.equal(verifyChain(left, anchor).ok, true);
  } finally {
    raw.disconnect();
    await s.close();
  }
});
