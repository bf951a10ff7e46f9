// Retention runs once at start. A gateway that stops at once (a busy port) closes the store under it, and
// that failure is the shutdown's, not news: `serve` promises no shutdown noise after its last line.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { auditCalls } from '../../../src/audit/audit-trail.js';
import { createLogger } from '../../../src/log/logger.js';
import { StoreGuard } from '../../../src/store/guard.js';
import { StoreUnavailableError, type Store } from '../../../src/store/store.js';

function pruneThatFails(): { store: Store; fail: () => void } {
  let fail!: () => void;
  const pending = new Promise<number>((_resolve, reject) => (fail = () => reject(new StoreUnavailableError('SQLite store: the writer stopped (exit code 1)'))));
  return { store: { kind: 'sqlite', pruneAudit: () => pending, ping: () => Promise.resolve() } as unknown as Store, fail };
}

const settle = () => new Promise((r) => setImmediate(r));

test('a retention run cut short by the shutdown is not logged; one that fails while running is', async () => {
  for (const stopFirst of [true, false]) {
    const lines: string[] = [];
    const log = createLogger('info', (l) => lines.push(l));
    const { store, fail } = pruneThatFails();
    const stop = auditCalls({}, new StoreGuard(store, createLogger('error', () => {})), { retainDays: 30 }, log);
    if (stopFirst) stop();
    fail();
    await settle();
    await settle();
    const warned = lines.some((l) => l.includes('audit retention could not run'));
    assert.equal(warned, !stopFirst, stopFirst ? 'stopped first: nothing logged' : 'still running: the failure is logged');
    if (!stopFirst) stop();
  }
});
