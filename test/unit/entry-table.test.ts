// src/entry-table.ts: the keyed table that replaces a Map where entries come and go with the calls. What
// it is for (no chain of old tables for V8 to keep) is shown by test/e2e/young-garbage.test.ts; this holds
// that it behaves as the Map it replaced.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryTable } from '../../src/entry-table.js';

test('entries are set, read, taken and counted as in a Map', () => {
  const t = new EntryTable<{ n: number }>();
  assert.equal(t.size, 0);
  t.set(1, { n: 1 });
  t.set('call-a', { n: 2 });
  t.set(1, { n: 3 });
  assert.equal(t.size, 2, 'setting a key again replaces its entry');
  assert.deepEqual(t.get(1), { n: 3 });
  assert.equal(t.has('call-a'), true);
  assert.deepEqual(t.take('call-a'), { n: 2 });
  assert.equal(t.has('call-a'), false);
  assert.equal(t.take('call-a'), undefined, 'a key taken once is gone');
  assert.equal(t.delete(1), true);
  assert.equal(t.delete(1), false);
  assert.equal(t.size, 0);
});

test('keys that name Object.prototype members are plain keys', () => {
  const t = new EntryTable<number>();
  for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
    assert.equal(t.has(key), false, key);
    t.set(key, 1);
  }
  assert.equal(t.size, 4);
  assert.equal(t.take('__proto__'), 1);
  assert.equal(t.size, 3);
});

test('takeAll hands over every entry, integer keys in ascending order, and leaves the table empty', () => {
  const t = new EntryTable<string>();
  for (const id of [12, 3, 7]) t.set(id, `r${id}`);
  assert.deepEqual(t.values(), ['r3', 'r7', 'r12']);
  assert.deepEqual(t.takeAll(), ['r3', 'r7', 'r12']);
  assert.equal(t.size, 0);
  assert.deepEqual(t.values(), []);
  t.set(1, 'again');
  assert.equal(t.size, 1);
});

test('a long run of entries added and removed keeps the count exact', () => {
  const t = new EntryTable<number>();
  const open: number[] = [];
  for (let id = 1; id <= 50_000; id++) {
    t.set(id, id);
    open.push(id);
    if (open.length > 16) assert.equal(t.take(open.shift()!), id - 16);
  }
  assert.equal(t.size, 16);
  assert.deepEqual(t.values(), open);
});
