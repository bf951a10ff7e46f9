// The store guard every governed call's store operations go through (rate limit, budget, audit): a failure
// marks the store down and reaches the caller as StoreUnavailableError, so the stage refuses the call (fail
// closed); the first ping that answers marks it up again, and another operation that answers meanwhile has
// the guard ping at once (an answer to a read is no proof the store takes writes).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../../src/log/logger.js';
import { StoreGuard } from '../../../src/store/guard.js';
import { StoreUnavailableError, type Store } from '../../../src/store/store.js';

const store = { kind: 'sqlite', ping: () => new Promise(() => {}), close: () => Promise.resolve() } as unknown as Store;
const guards: StoreGuard[] = [];
after(() => Promise.all(guards.map((g) => g.close())));

function guard(lines: string[] = [], errors: { n: number } = { n: 0 }, on: Store = store): StoreGuard {
  const g = new StoreGuard(on, createLogger('info', (l) => lines.push(l)), () => errors.n++);
  guards.push(g);
  return g;
}

/** A store whose pings the test answers: `answer(ok)` settles the pings asked for so far. */
function pingable(): { store: Store; pings: () => number; answer(ok: boolean): Promise<void> } {
  let waiting: Array<{ resolve(): void; reject(e: Error): void }> = [];
  let pings = 0;
  const s = {
    kind: 'redis',
    ping: () =>
      new Promise<void>((resolve, reject) => {
        pings++;
        waiting.push({ resolve, reject });
      }),
    close: () => Promise.resolve(),
  } as unknown as Store;
  return {
    store: s,
    pings: () => pings,
    answer: async (ok) => {
      const now = waiting;
      waiting = [];
      for (const w of now) (ok ? w.resolve() : w.reject(new Error('OOM command not allowed')));
      await new Promise((r) => setImmediate(r));
    },
  };
}

test('an operation that answers passes its value on', async () => {
  assert.equal(await guard().run(() => Promise.resolve(42)), 42);
});

test('an operation that fails marks the store down and is refused as StoreUnavailableError; the next success has it pinged, and the ping marks it up', async () => {
  const lines: string[] = [];
  const errors = { n: 0 };
  const p = pingable();
  const g = guard(lines, errors, p.store);
  await assert.rejects(
    g.run(() => Promise.reject(new Error('disk I/O error'))),
    (err: unknown) => err instanceof StoreUnavailableError && /disk I\/O error/.test(err.message),
  );
  assert.equal(g.available, false);
  assert.equal(errors.n, 1);
  assert.ok(lines.some((l) => l.includes('the store is unavailable')));
  assert.equal(await g.run(() => Promise.resolve('back')), 'back');
  assert.equal(g.available, false, 'an answer alone does not mark it up');
  assert.equal(p.pings(), 1, 'it has the store pinged at once');
  assert.equal(await g.run(() => Promise.resolve('again')), 'again');
  assert.equal(p.pings(), 1, 'one ping at a time');
  await p.answer(true);
  assert.equal(g.available, true);
  assert.ok(lines.some((l) => l.includes('the store is back')));
});

test('a store that answers reads but fails its ping (a full Redis) stays down', async () => {
  const p = pingable();
  const g = guard([], { n: 0 }, p.store);
  await assert.rejects(g.run(() => Promise.reject(new Error('OOM command not allowed'))), StoreUnavailableError);
  assert.deepEqual(await g.run(() => Promise.resolve(['ap_1'])), ['ap_1'], 'a read answers');
  await p.answer(false);
  assert.equal(g.available, false);
  const ready = g.check();
  await p.answer(false);
  assert.equal(await ready, false, 'readiness pings too');
  assert.equal(g.available, false);
});

test('an operation that throws before it returns a promise is a rejected promise too, never an exception in the stage', async () => {
  const g = guard();
  let running: Promise<unknown> | undefined;
  assert.doesNotThrow(() => {
    running = g.run(() => {
      throw new Error('store: closed');
    });
  });
  await assert.rejects(running!, StoreUnavailableError);
  assert.equal(g.available, false);
});

// runNow: for the rate limit's take and the budget's spend, which the SQLite store answers at once on a row
// it holds. The stages await only a promise; the failure rules are run's.
test('runNow passes an answer given at once on as it is (no promise), and it has a down store pinged', async () => {
  const p = pingable();
  const g = guard([], { n: 0 }, p.store);
  await assert.rejects(g.run(() => Promise.reject(new Error('disk I/O error'))), StoreUnavailableError);
  assert.equal(g.available, false);
  const answer = g.runNow(() => ({ allowed: true }));
  assert.ok(!(answer instanceof Promise), 'not a promise');
  assert.deepEqual(answer, { allowed: true });
  assert.equal(p.pings(), 1);
  await p.answer(true);
  assert.equal(g.available, true);
});

test('runNow waits on a promise as run does, and refuses its failure as StoreUnavailableError', async () => {
  const g = guard();
  const later = g.runNow(() => Promise.resolve(7));
  assert.ok(later instanceof Promise);
  assert.equal(await later, 7);
  await assert.rejects(Promise.resolve(g.runNow(() => Promise.reject(new Error('gone')))), (err: unknown) => err instanceof StoreUnavailableError && /gone/.test(err.message));
  assert.equal(g.available, false);
});

test('runNow throws an operation that throws at once, as StoreUnavailableError, and marks the store down', () => {
  const g = guard();
  assert.throws(
    () =>
      g.runNow(() => {
        throw new Error('SQLite store: closed');
      }),
    StoreUnavailableError,
  );
  assert.equal(g.available, false);
});

test('a StoreUnavailableError is passed on as it is, not wrapped again', async () => {
  const own = new StoreUnavailableError('SQLite store: the writer stopped (exit code 1)');
  await assert.rejects(guard().run(() => Promise.reject(own)), (err: unknown) => err === own);
});
