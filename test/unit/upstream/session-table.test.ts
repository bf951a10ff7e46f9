// Gateway-held legacy sessions: cap with LRU eviction, idle expiry, and the reason a dead id reports
// (2025-11-25/basic/transports.mdx §Session Management 3: a terminated session answers 404).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SessionTable, type EndReason, type HeldSession } from '../../../src/upstream/session-table.js';

class Fake implements HeldSession {
  lastUsed = Date.now();
  closed?: EndReason;
  busy = false;
  /** Only a listening stream open: not idle, but no call would fail if it ended. */
  listening = false;
  isIdle(): boolean {
    return !this.busy && !this.listening;
  }
  hasCallInFlight(): boolean {
    return this.busy;
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

// Until 4 December the cap ended the least recently used session whatever ran on it: a caller's call in
// flight failed because someone else initialized (2025-11-25/basic/transports.mdx §Session Management: an
// ended session answers 404 and its client starts anew, which an idle session can afford and a call cannot).
test('at the cap a session with a call in flight is never ended: the idle one goes first, then one only listening', async () => {
  const table = new SessionTable<Fake>({ max: 3, idleTimeoutMs: 60_000 });
  const [calling, listening, idle] = [new Fake(), new Fake(), new Fake()];
  calling.lastUsed = 1;
  calling.busy = true;
  listening.lastUsed = 2;
  listening.listening = true;
  idle.lastUsed = 3;
  table.add('calling', calling);
  table.add('listening', listening);
  table.add('idle', idle);
  assert.equal(table.makeRoom(), true);
  assert.equal(idle.closed, 'session_cap', 'the idle one, though the most recently used');
  assert.equal(calling.closed, undefined);
  const next = new Fake();
  next.busy = true;
  table.add('next', next);
  // No idle session left: one with only a stream open ends (its client reconnects and learns 404).
  assert.equal(table.makeRoom(), true);
  assert.equal(listening.closed, 'session_cap');
  assert.equal(calling.closed, undefined);
  assert.equal(next.closed, undefined);
  await table.closeAll();
});

test('at the cap with a call in flight on every session, nothing ends: makeRoom and reserve say there is no room', async () => {
  const table = new SessionTable<Fake>({ max: 2, idleTimeoutMs: 60_000 });
  const [a, b] = [new Fake(), new Fake()];
  a.busy = b.busy = true;
  table.add('a', a);
  table.add('b', b);
  assert.equal(table.makeRoom(), false);
  assert.equal(table.reserve(), undefined);
  assert.equal(a.closed, undefined);
  assert.equal(b.closed, undefined);
  // A call ends: its session can make room again.
  b.busy = false;
  const release = table.reserve();
  assert.ok(release, 'room once a session is idle');
  assert.equal(b.closed, 'session_cap');
  release();
  await table.closeAll();
});
