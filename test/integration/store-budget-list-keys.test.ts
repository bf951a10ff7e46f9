// `gatehouse budgets show` lists budget counters with Store.listBudgets(prefix). The SQLite store gives
// every current counter whose key starts with the prefix, the key as spent from. The Redis store found its
// keys with SCAN MATCH "<keyPrefix>{g:<prefix>*", where it escaped the prefix but not store.keyPrefix: a
// keyPrefix with a glob character ("gatehouse[eu]:", which the config allows, only braces are refused)
// matched none of its own keys, and the command said nothing was spent. And it cut a key at its first "}|"
// where the window's start is appended after the last: a subject holding "}|" (an OAuth `sub` is the
// issuer's string) was listed as another, shorter one.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

const kinds: Array<{ kind: string; open(keyPrefix: string): Store }> = [
  { kind: 'sqlite', open: () => openStore({ kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-budget-keys-')), 'state.db') }) },
  { kind: 'redis', open: (keyPrefix) => openStore({ kind: 'redis', url: redis.url, keyPrefix, commandTimeoutMs: 2_000 }) },
];

for (const { kind, open } of kinds) {
  describe(`budget counters listed by key: ${kind}`, () => {
    test('a store.keyPrefix with glob characters lists its own counters, and only those', async () => {
      const s = open('gatehouse[eu]:');
      // Another gateway on the same Redis, whose prefix the unescaped pattern matches.
      const other = open('gatehousee:');
      try {
        await s.spendBudget('budget:b:subject:oauth:alice', 2, 10, 'day');
        await other.spendBudget('budget:b:subject:oauth:mallory', 3, 10, 'day');
        assert.deepEqual(
          (await s.listBudgets('budget:')).map((c) => [c.key, c.used]),
          [['budget:b:subject:oauth:alice', 2]],
        );
      } finally {
        await s.close();
        await other.close();
      }
    });

    test('a key holding "}|" is listed whole', async () => {
      const s = open(`budget-keys-${Date.now()}:`);
      try {
        await s.spendBudget('budget:b:subject:oauth:alice}|bob', 1, 10, 'month');
        assert.deepEqual(
          (await s.listBudgets('budget:')).map((c) => [c.key, c.used]),
          [['budget:b:subject:oauth:alice}|bob', 1]],
        );
      } finally {
        await s.close();
      }
    });
  });
}
