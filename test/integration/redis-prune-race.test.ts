// Audit retention on a Redis shared by replicas: every replica prunes at start and then on a timer
// (audit-trail.ts), each with its own cut (its clock, less audit.retainDays). A prune reads the log to find
// the last record older than its cut, then sets the anchor to it and removes everything up to it. When two
// prunes interleave, the one with the earlier cut can write last: its anchor (an earlier record) then
// replaced the later one while the records between were already gone, and `gatehouse audit verify` called
// the intact chain broken ("records N–M are missing"). The anchor only ever moves on.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { verifyChain } from '../../src/store/audit-chain.js';
import { openStore } from '../../src/store/open-store.js';
import type { AuditEntry } from '../../src/store/store.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

const DAY = 86_400_000;
function entry(n: number, time: number): AuditEntry {
  return { time: new Date(time).toISOString(), callId: `call-${n}`, runId: `run-${n}`, subject: 'key:ci', method: 'tools/call', tool: 'echo', toolRef: 'up/echo', outcome: 'ok', latencyMs: 1 };
}

test('two prunes whose reads and writes interleave leave the anchor at the later cut and a chain that verifies', async () => {
  const s = openStore({ kind: 'redis', url: redis.url, keyPrefix: 'prune-race:', commandTimeoutMs: 2_000 });
  try {
    const now = Date.now();
    // Records 1–4 are 10 days old, 5–8 five days old, 9–10 new.
    for (let i = 0; i < 4; i++) await s.appendAudit(entry(i, now - 10 * DAY + i));
    for (let i = 4; i < 8; i++) await s.appendAudit(entry(i, now - 5 * DAY + i));
    for (let i = 8; i < 10; i++) await s.appendAudit(entry(i, now));
    // A replica keeping 1 day and one keeping 7 (or a clock days behind): both read the log, then the one
    // with the later cut writes first. One connection carries both in the order Redis gets them from two
    // replicas when they interleave so.
    const [later, earlier] = await Promise.all([s.pruneAudit(now - DAY), s.pruneAudit(now - 7 * DAY)]);
    assert.equal(later, 8, 'the later cut removed records 1–8');
    assert.equal(earlier, 0, 'the earlier cut finds nothing left to remove');
    const anchor = await s.auditAnchor();
    assert.equal(anchor?.seq, 8, 'the anchor is the last record removed');
    const left = await s.readAudit({});
    assert.deepEqual(left.map((r) => r.seq), [9, 10]);
    const verdict = verifyChain(left, anchor);
    assert.equal(verdict.ok, true, `the chain verifies from its anchor: ${JSON.stringify(verdict)}`);
  } finally {
    await s.close();
  }
});
