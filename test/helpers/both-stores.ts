// One store contract run on both stores: a `SQLite` suite (a fresh file per reset, in a temp dir removed
// afterwards) and a `Redis` suite (a real Redis, flushed at each reset).

import { after, before, describe } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { redisForSuite } from './redis.js';

/**
 * `contract` declares tests that call `reset` before `open`. `tmpPrefix` names the SQLite temp dir
 * (gatehouse-…-), `keyPrefix` the Redis store's keys.
 */
export function onBothStores(names: { tmpPrefix: string; keyPrefix: string }, contract: (open: () => Store, reset: () => Promise<void>) => void): void {
  describe('SQLite', () => {
    let dir: string;
    let n = 0;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), names.tmpPrefix));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));
    contract(() => openStore({ kind: 'sqlite', path: join(dir, `state-${n}.db`) }), async () => void n++);
  });

  describe('Redis', () => {
    const r = redisForSuite();
    contract(() => openStore({ kind: 'redis', url: r.redis.url, keyPrefix: names.keyPrefix, commandTimeoutMs: 5_000 }), async () => void (await r.raw.flushall()));
  });
}
