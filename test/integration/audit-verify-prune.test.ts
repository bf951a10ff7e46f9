// `gatehouse audit verify` while retention prunes (every replica prunes at start and on a timer,
// audit-trail.ts). verify reads the anchor, then the records page by page; a prune between two reads
// removes records verify has not read yet and moves the anchor past them. The next page then starts after
// the new anchor, and verify said "audit chain broken: records 1001–1500 are missing", exit 1, on an intact
// log: an operator was told of tampering that never happened. verify now re-reads the anchor when records
// are missing and, if a prune has moved it past them, judges the chain from the new anchor on. A gap the
// anchor does not explain is still a break. Both stores, with the prune run on a second handle (a gateway
// sharing the file or the Redis) at a chosen moment of verify's reads.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyAudit } from '../../src/cli/audit.js';
import { openStore } from '../../src/store/open-store.js';
import type { AuditEntry, Store } from '../../src/store/store.js';
import { captured } from '../helpers/audit-cli.js';
import { redisForSuite } from '../helpers/redis.js';

const DAY = 86_400_000;
const OLD = 1_500;
const NEW = 1_000;

function entry(i: number, time: number): AuditEntry {
  return { time: new Date(time).toISOString(), callId: `c${i}`, runId: `r${i}`, subject: 'alice', method: 'tools/call', tool: 'lookup', outcome: 'ok', latencyMs: 1 };
}

/** 1,500 records two days old, then 1,000 from now: more than two of verify's pages (1,000 records each). */
async function fill(store: Store): Promise<void> {
  const now = Date.now();
  for (let i = 1; i <= OLD + NEW; i += 250) {
    await Promise.all(Array.from({ length: 250 }, (_, k) => store.appendAudit(entry(i + k, i + k <= OLD ? now - 2 * DAY + i + k : now), 250)));
  }
}

/** `store`, whose `after`-th read (0: the anchor, 1: the first page of records) runs `prune` before it answers. */
function pruningDuring(store: Store, at: 'anchor' | 'first page', prune: () => Promise<unknown>): Store {
  let done = false;
  const once = async <T>(value: T): Promise<T> => {
    if (!done) {
      done = true;
      await prune();
    }
    return value;
  };
  return new Proxy(store, {
    get(target, name, receiver) {
      if (name === 'auditAnchor' && at === 'anchor') return () => target.auditAnchor().then(once);
      if (name === 'readAudit' && at === 'first page') return (q: Parameters<Store['readAudit']>[0]) => target.readAudit(q).then(once);
      const value = Reflect.get(target, name, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * On a fresh, filled log, two handles on the store (`open` is called twice): the gateway's, which prunes,
 * and verify's; `run` gets both, and both are closed after it, whatever happens.
 */
async function withFilledLog(open: () => Store, reset: () => Promise<void>, run: (gateway: Store, cli: Store) => Promise<void>): Promise<void> {
  await reset();
  const gateway = open();
  const cli = open();
  try {
    await fill(gateway);
    await run(gateway, cli);
  } finally {
    await gateway.close();
    await cli.close();
  }
}

/** Runs the race on a fresh log: `open` gives a handle on the store, `reset` empties it. */
function races(open: () => Store, reset: () => Promise<void>): void {
  for (const at of ['first page', 'anchor'] as const) {
    test(`a prune between verify's reads (after the ${at}) is not reported as missing records`, { timeout: 60_000 }, () =>
      withFilledLog(open, reset, async (gateway, cli) => {
        const io = captured();
        const code = await verifyAudit(pruningDuring(cli, at, () => gateway.pruneAudit(Date.now() - DAY)), io, undefined);
        assert.equal(io.errText, '');
        assert.equal(code, 0);
        assert.equal(io.outText, `audit chain ok: ${NEW} records (from the anchor after record ${OLD}), last ${OLD + NEW}, head ${(await cli.readAudit({ afterSeq: OLD + NEW - 1 }))[0]!.hash}\n`);
      }),
    );
  }

  test('records missing that no prune explains are still a break', { timeout: 60_000 }, () =>
    withFilledLog(open, reset, async (gateway, cli) => {
      const io = captured();
      // The prune moves the anchor to record 1,500, but records 2,001 to 2,100 are gone as well.
      const code = await verifyAudit(pruningDuring(cli, 'first page', async () => {
        await gateway.pruneAudit(Date.now() - DAY);
        await removeRecords(2_001, 2_100);
      }), io, undefined);
      assert.equal(code, 1);
      assert.match(io.errText, /^audit chain broken at record 2101: records 2001–2100 are missing; 500 records before it verify \(from the anchor after record 1500\)\n$/);
    }),
  );
}

let removeRecords: (from: number, to: number) => Promise<void>;

describe('SQLite', () => {
  let dir: string;
  let path: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-verify-prune-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  races(
    () => openStore({ kind: 'sqlite', path }),
    async () => {
      path = join(dir, `state-${++n}.db`);
      removeRecords = async (from, to) => {
        const { default: Database } = await import('better-sqlite3');
        const db = new Database(path);
        db.prepare('DELETE FROM audit WHERE seq BETWEEN ? AND ?').run(from, to);
        db.close();
      };
    },
  );
});

describe('Redis', () => {
  const r = redisForSuite();
  races(
    () => openStore({ kind: 'redis', url: r.redis.url, keyPrefix: 'verify:', commandTimeoutMs: 5_000 }),
    async () => {
      await r.raw.flushall();
      removeRecords = async (from, to) => {
        await r.raw.zremrangebyscore('verify:{audit}:log', from, to);
      };
    },
  );
});
