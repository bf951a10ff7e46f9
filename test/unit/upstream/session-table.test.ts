// Gateway-held legacy sessions: cap with LRU eviction, idle expiry, and the reason a dead id reports
// (2025-11-25/basic/transports.mdx §Session Management 3: a terminated session answers 404).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SessionTable, type EndReason, type HeldSession } from '../../../src/upstream/session-table.js';

class Fake implements HeldSession {
  lastUsed = Date.now();
  closed?: EndReason;
  busy = false;
  isIdle(): boolean {
    return !this.busy;
  }
  async close(reason: EndReason): Promise<void> {
    this.closed = reason;
  }
}

test('at the cap the least recently used session ends with reason session_cap', async () => {
  const table = new SessionTable<Fake>({ max: 2, idleTimeoutMs: 60_000 });
  const [a, b] = [new Fake(), new Fake()];
  a.lastUsed = 1;
  b.lastUsed = 2;
  table.add('a', a);
  table.add('b', b);
  table.makeRoom();
  table.add('c', new Fake());
  assert.equal(a.closed, 'session_cap');
  assert.deepEqual(table.lookup('a'), { found: false, reason: 'session_cap' });
  assert.equal(table.lookup('b').found, true);
  await table.closeAll();
});

test('idle sessions end with idle_timeout, busy ones stay; unknown ids say unknown; DELETE says client_closed', async () => {
  const table = new SessionTable<Fake>({ max: 10, idleTimeoutMs: 1000 });
  const [idle, busy, mine] = [new Fake(), new Fake(), new Fake()];
  idle.lastUsed = busy.lastUsed = 0;
  busy.busy = true;
  table.add('idle', idle);
  table.add('busy', busy);
  table.add('mine', mine);
  table.sweep(5000);
  assert.equal(idle.closed, 'idle_timeout');
  assert.equal(busy.closed, undefined);
  assert.deepEqual(table.lookup('idle'), { found: false, reason: 'idle_timeout' });
  table.end('mine', 'client_closed');
  assert.deepEqual(table.lookup('mine'), { found: false, reason: 'client_closed' });
  assert.deepEqual(table.lookup('never'), { found: false, reason: 'unknown' });
  assert.match(table.newId(), /^[\x21-\x7e]{32,}$/);
  await table.closeAll();
});
