// One contract, two stores (issue 12 item 1): the SQLite file and a real Redis (Debian's redis-server on a
// free port) must behave the same for everything Gatehouse keeps: fixed windows, token buckets, idempotency
// records (atomic claims under concurrency, leases, answers, expiry), approvals and the hash-chained audit
// log with retention. Then what only Redis promises: the clock is Redis' own, every key carries the prefix
// and (but the audit log, which retention prunes) a TTL, and keys used together share a Cluster slot.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { verifyChain } from '../../src/store/audit-chain.js';
import { calendarWindow } from '../../src/store/calendar.js';
import { openStore } from '../../src/store/open-store.js';
import { WINDOW_OF } from '../../src/store/redis-store.js';
import type { AuditEntry, Store } from '../../src/store/store.js';
import { startRedis, testCertificates, type TestRedis } from '../helpers/redis.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function entry(n: number, over: Partial<AuditEntry> = {}): AuditEntry {
  return { time: new Date().toISOString(), callId: `call-${n}`, runId: `run-${n}`, subject: 'key:ci', method: 'tools/call', tool: 'echo', toolRef: 'up/echo', outcome: 'ok', latencyMs: 1, ...over };
}

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

let prefixes = 0;
/** Time passes for the breaker row `key` (kept `keptMs` more by its store): returns what puts the clock back. */
type Lapse = (key: string, keptMs: number) => Promise<() => void>;
/** The row whose times a test moves: a token bucket's or a breaker's, by the key the test gave the store. */
type ClockedRow = { bucket: string } | { breaker: string };
/**
 * The store's clock as a test moves it, for one row. `advance` lets exactly `ms` more pass for that row;
 * `now` is the store's time as the test sees it (the process' own plus what was advanced); `restore` gives
 * the process its clock back. SQLite reads this process' Date.now, which is held still and stepped. Redis'
 * clock cannot be moved, so the times the row holds are moved back by `ms` instead: its clock keeps running,
 * but the tests' periods are a minute long, so no slowness of a shared machine between two store calls can
 * turn a refusal into an admission (with one-second periods and real sleeps, any call taking longer than
 * 750 ms did).
 */
interface StoreClock { advance(ms: number): Promise<void>; now(): number; restore(): void }
const kinds: Array<{ kind: 'sqlite' | 'redis'; open(): Store; lapse: Lapse; clock(row: ClockedRow): StoreClock }> = [
  {
    kind: 'sqlite',
    open: () => openStore({ kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-contract-')), 'state.db') }),
    // The SQLite store decides on the rows it holds by this process' clock: move it on (from where it is).
    lapse: async (_key, keptMs) => {
      const before = Date.now;
      Date.now = () => before() + keptMs + 1_000;
      return () => (Date.now = before);
    },
    clock: () => {
      const real = Date.now;
      let now = real();
      Date.now = () => now;
      return {
        advance: async (ms) => void (now += ms),
        now: () => now,
        restore: () => void (Date.now = real),
      };
    },
  },
  {
    kind: 'redis',
    // Each test its own prefix: one server, no test sees another's keys.
    open: () => openStore({ kind: 'redis', url: redis.url, keyPrefix: `contract${++prefixes}:`, commandTimeoutMs: 2_000 }),
    // Redis' clock cannot be moved: the key's TTL, once checked to be what is kept, is run out instead.
    lapse: async (key, keptMs) => {
      const raw = new Redis(redis.url);
      try {
        const [found] = await raw.keys(`contract*:k:${key}`);
        assert.ok(found !== undefined, `the breaker key of ${key} is in Redis`);
        const ttl = await raw.pttl(found);
        assert.ok(ttl > keptMs - 5_000 && ttl <= keptMs, `${found} lives ${ttl} ms, what the store keeps (${keptMs} ms)`);
        await raw.pexpire(found, 1);
        await sleep(10);
      } finally {
        raw.disconnect();
      }
      return () => {};
    },
    clock: (row) => {
      const raw = new Redis(redis.url);
      // The prefix of the store the running test opened last (fresh()).
      const key = 'bucket' in row ? `contract${prefixes}:b:${row.bucket}` : `contract${prefixes}:k:${row.breaker}`;
      let advanced = 0;
      return {
        advance: async (ms) => {
          assert.equal(await raw.exists(key), 1, `${key} is in Redis`);
          if ('bucket' in row) await raw.hincrbyfloat(key, 'at', -ms);
          else {
            const held = JSON.parse((await raw.get(key))!) as { until: number; windowStart: number };
            held.until -= ms;
            held.windowStart -= ms;
            assert.equal(await raw.set(key, JSON.stringify(held), 'KEEPTTL'), 'OK');
          }
          advanced += ms;
        },
        now: () => Date.now() + advanced,
        restore: () => raw.disconnect(),
      };
    },
  },
];

for (const { kind, open, lapse, clock } of kinds) {
  describe(`store contract: ${kind}`, () => {
    const opened: Store[] = [];
    const fresh = (): Store => {
      const s = open();
      opened.push(s);
      return s;
    };
    after(async () => {
      for (const s of opened) await s.close();
    });

    test('answers a ping and says what it is', async () => {
      const s = fresh();
      await s.ping();
      assert.equal(s.kind, kind);
    });

    test('a fixed window adds up within the window and starts again after it', async () => {
      const s = fresh();
      const a = await s.addToWindow('calls', 2, 400);
      // The add happened between these two instants, however long it took: its window ends after the first
      // and at most one window after the second (a bound taken after the assertion's own delay failed under load).
      const beforeB = Date.now();
      const b = await s.addToWindow('calls', 3, 400);
      const afterB = Date.now();
      const other = await s.addToWindow('other', 1, 400);
      if (a.resetsAt === b.resetsAt) assert.equal(b.total, 5);
      else assert.equal(b.total, 3, 'a window boundary fell between the two adds');
      assert.equal(other.total, 1, 'keys are counted apart');
      assert.ok(b.resetsAt > beforeB && b.resetsAt <= afterB + 400, `resetsAt ${b.resetsAt} ends the window of an add made between ${beforeB} and ${afterB}`);
      assert.equal(b.resetsAt % 400, 0, 'windows are aligned to the epoch');
      await sleep(b.resetsAt - Date.now() + 30);
      const c = await s.addToWindow('calls', 1, 400);
      assert.equal(c.total, 1);
      assert.ok(c.resetsAt > b.resetsAt);
    });

    test('concurrent adds to one window are all counted', async () => {
      const s = fresh();
      const totals = await Promise.all(Array.from({ length: 50 }, () => s.addToWindow('busy', 1, 60_000)));
      const resets = new Set(totals.map((t) => t.resetsAt));
      if (resets.size === 1) {
        assert.deepEqual(
          totals.map((t) => t.total).sort((x, y) => x - y),
          Array.from({ length: 50 }, (_, i) => i + 1),
          'every add saw a distinct total: none was lost',
        );
      }
    });

    test('a token bucket gives its burst, refuses with a retry time, and refills over time', async () => {
      const s = fresh();
      // One token a minute: the refusal below comes a quarter of a token after the burst was taken, so the
      // retry time is what the missing three quarters take, not a whole token's time nor the bucket's.
      const bucket = { rate: 1, perMs: 60_000, burst: 3 };
      for (let i = 0; i < 3; i++) assert.equal((await s.takeTokens('b', bucket, 1)).allowed, true, `take ${i + 1} of the burst`);
      const time = clock({ bucket: 'b' });
      try {
        await time.advance(15_000);
        const refused = await s.takeTokens('b', bucket, 1);
        assert.equal(refused.allowed, false);
        assert.ok(refused.remaining >= 0.25 && refused.remaining < 1, `${refused.remaining} tokens refilled since the burst`);
        // Redis hands the tokens back as Lua prints them (14 digits): its ceil may land one off at an integer.
        const missingMs = (1 - refused.remaining) * 60_000;
        assert.ok(refused.retryAfterMs >= missingMs - 1e-6 && refused.retryAfterMs < missingMs + 1 + 1e-6, `retry after ${refused.retryAfterMs} ms for the ${missingMs} ms a token lacks`);
        await time.advance(refused.retryAfterMs + 30);
        assert.equal((await s.takeTokens('b', bucket, 1)).allowed, true, 'a token came back');
      } finally {
        time.restore();
      }
      const big = await s.takeTokens('b2', bucket, 5);
      assert.equal(big.allowed, false, 'a cost above the burst is never allowed');
    });

    test('a budget spends up to its limit in the calendar window, then refuses without spending; counters are listed', async () => {
      const s = fresh();
      const first = await s.spendBudget('budget:daily:alice', 3, 5, 'day');
      assert.equal(first.allowed, true);
      assert.equal(first.used, 3);
      assert.equal(first.resetsAt, calendarWindow(Date.now(), 'day').end);
      const beforeRefused = Date.now();
      const refused = await s.spendBudget('budget:daily:alice', 3, 5, 'day');
      const afterRefused = Date.now();
      assert.deepEqual({ ...refused, resetsInMs: undefined }, { allowed: false, used: 3, resetsAt: first.resetsAt, resetsInMs: undefined }, 'past the limit: refused, nothing spent');
      // The wait until the window ends, on the store's clock (Redis' own, which this process shares here),
      // read while the spend was made: between these two instants, however long it took.
      assert.ok(refused.resetsInMs <= first.resetsAt - beforeRefused && refused.resetsInMs >= first.resetsAt - afterRefused, `${refused.resetsInMs} ms until ${new Date(first.resetsAt).toISOString()}, from a spend made between ${beforeRefused} and ${afterRefused}`);
      assert.equal((await s.spendBudget('budget:daily:alice', 2, 5, 'day')).used, 5, 'exactly the limit is allowed');
      assert.equal((await s.spendBudget('budget:daily:bob', 1, 5, 'day')).used, 1, 'budgets are kept apart by key');
      const month = await s.spendBudget('budget:monthly:alice', 1, 100, 'month');
      assert.equal(month.resetsAt, calendarWindow(Date.now(), 'month').end, 'a calendar month in UTC');
      const concurrent = await Promise.all(Array.from({ length: 20 }, () => s.spendBudget('budget:race:t', 1, 7, 'hour')));
      assert.equal(concurrent.filter((c) => c.allowed).length, 7, 'concurrent spends never pass the limit');
      const listed = await s.listBudgets('budget:daily:');
      assert.deepEqual(
        listed.map((c) => [c.key, c.used]),
        [
          ['budget:daily:alice', 5],
          ['budget:daily:bob', 1],
        ],
      );
      assert.equal(listed[0]!.resetsAt, first.resetsAt);
    });

    test('fractional costs add up as written: 100 spends of 0.01 fit a limit of 1, the 101st does not; the same on both stores', async () => {
      // As binary floats 100 × 0.01 came to 1.0000000000000007 in SQLite (99 admitted) while Redis, whose
      // INCRBYFLOAT rounds, admitted 100: replicas and stores disagreed on the same budget (3 December).
      const s = fresh();
      let admitted = 0;
      for (let i = 0; i < 101; i++) if ((await s.spendBudget('budget:cents:alice', 0.01, 1, 'day')).allowed) admitted++;
      assert.equal(admitted, 100);
      const seven = await Promise.all(Array.from({ length: 10 }, () => s.spendBudget('budget:sevenths:alice', 0.07, 0.7, 'day')));
      assert.equal(seven.filter((x) => x.allowed).length, 10);
      assert.deepEqual((await s.listBudgets('budget:cents:')).map((c) => c.used), [1]);
    });

    test('a refund gives back what a spend took, in the window that spend fell in, never below zero; an ended window is left alone', async () => {
      const s = fresh();
      // Month windows: a test this short does not cross into the next one, bar a few seconds a month.
      const spent = await s.spendBudget('budget:refund:alice', 3, 5, 'month');
      assert.equal(spent.used, 3);
      await s.refundBudget('budget:refund:alice', 2, 'month', spent.resetsAt);
      assert.equal((await s.spendBudget('budget:refund:alice', 4, 5, 'month')).used, 5, 'the 2 given back could be spent again');
      assert.equal((await s.spendBudget('budget:refund:alice', 1, 5, 'month')).allowed, false);
      await s.refundBudget('budget:refund:alice', 9, 'month', spent.resetsAt);
      assert.deepEqual(
        (await s.listBudgets('budget:refund:')).map((c) => [c.key, c.used]),
        [['budget:refund:alice', 0]],
        'never below zero',
      );
      // A refund names its window by the end the spend reported: the month before this one has ended, and
      // a time that ends no window names none.
      const previousMonthEnd = calendarWindow(Date.now(), 'month').start;
      await s.spendBudget('budget:refund:bob', 2, 5, 'month');
      await s.refundBudget('budget:refund:bob', 2, 'month', previousMonthEnd);
      await s.refundBudget('budget:refund:bob', 2, 'month', spent.resetsAt - 1);
      await s.refundBudget('budget:refund:nobody', 1, 'month', spent.resetsAt);
      assert.deepEqual(
        (await s.listBudgets('budget:refund:')).map((c) => [c.key, c.used]),
        [
          ['budget:refund:alice', 0],
          ['budget:refund:bob', 2],
        ],
        'nothing is given back to a window that ended, nor made for a budget never spent',
      );
    });

    test('a breaker opens on consecutive failures, refuses while open, lets exactly one probe through, and closes on its success', async () => {
      const s = fresh();
      const cfg = { consecutiveFailures: 3, minCalls: 10, windowMs: 60_000, coolDownMs: 60_000 };
      assert.deepEqual(await s.breakerAdmit('br:a', cfg), { verdict: 'closed' });
      assert.equal(await s.breakerRecord('br:a', false, cfg), 'closed');
      assert.equal(await s.breakerRecord('br:a', true, cfg), 'closed', 'a success resets the count');
      for (let i = 0; i < 2; i++) assert.equal(await s.breakerRecord('br:a', false, cfg), 'closed');
      const time = clock({ breaker: 'br:a' });
      try {
        // A quarter of the cool-down after it opened: the retry time is what is left of it, not all of it.
        const beforeOpen = time.now();
        assert.equal(await s.breakerRecord('br:a', false, cfg), 'open');
        await time.advance(15_000);
        const open = await s.breakerAdmit('br:a', cfg);
        const afterAdmit = time.now();
        assert.ok(open.verdict === 'open', JSON.stringify(open));
        assert.ok(open.retryAfterMs > 0 && open.retryAfterMs <= 45_000 && open.retryAfterMs >= 60_000 - (afterAdmit - beforeOpen), `retry after ${open.retryAfterMs} ms: the cool-down's end, seen from an admission ${afterAdmit - beforeOpen} ms at most after the opening`);
        await time.advance(open.retryAfterMs + 50);
        const admits = await Promise.all(Array.from({ length: 10 }, () => s.breakerAdmit('br:a', cfg)));
        const probes = admits.flatMap((a) => (a.verdict === 'probe' ? [a.probe] : []));
        assert.equal(probes.length, 1, 'one probe');
        assert.equal(admits.filter((a) => a.verdict === 'open').length, 9, 'the others are still refused');
        assert.equal(await s.breakerRecord('br:a', true, cfg, probes[0]), 'closed');
        assert.deepEqual(await s.breakerAdmit('br:a', cfg), { verdict: 'closed' });
      } finally {
        time.restore();
      }
    });

    test('a failed probe reopens the breaker; an error rate over the window opens it too', async () => {
      const s = fresh();
      const cfg = { consecutiveFailures: 2, minCalls: 10, windowMs: 60_000, coolDownMs: 60_000 };
      await s.breakerRecord('br:b', false, cfg);
      assert.equal(await s.breakerRecord('br:b', false, cfg), 'open');
      const time = clock({ breaker: 'br:b' });
      try {
        await time.advance(60_050);
        const probe = await s.breakerAdmit('br:b', cfg);
        assert.equal(probe.verdict, 'probe');
        assert.equal(await s.breakerRecord('br:b', false, cfg, probe.verdict === 'probe' ? probe.probe : undefined), 'open');
        assert.equal((await s.breakerAdmit('br:b', cfg)).verdict, 'open');
      } finally {
        time.restore();
      }
      const rate = { consecutiveFailures: 100, errorRate: 0.5, minCalls: 4, windowMs: 60_000, coolDownMs: 1_000 };
      const states = [];
      for (const ok of [true, false, true, false]) states.push(await s.breakerRecord('br:c', ok, rate));
      assert.deepEqual(states, ['closed', 'closed', 'closed', 'open'], 'half the calls failed once minCalls were in');
    });

    // A call admitted while the circuit was closed may answer long after it opened, while a probe is out:
    // once that late answer was taken as the probe's and closed (or reopened) the circuit.
    test('half-open, only the probe decides: late answers of calls admitted before, and of a probe whose time ran out, change nothing', async () => {
      const s = fresh();
      const cfg = { consecutiveFailures: 2, minCalls: 10, windowMs: 60_000, coolDownMs: 60_000 };
      assert.deepEqual(await s.breakerAdmit('br:late', cfg), { verdict: 'closed' }, 'a slow call goes through while closed');
      await s.breakerRecord('br:late', false, cfg);
      assert.equal(await s.breakerRecord('br:late', false, cfg), 'open');
      const time = clock({ breaker: 'br:late' });
      try {
        await time.advance(60_050);
        const first = await s.breakerAdmit('br:late', cfg);
        assert.equal(first.verdict, 'probe');
        assert.equal(await s.breakerRecord('br:late', true, cfg), 'half_open', "the slow call's late success is not the probe's");
        assert.equal((await s.breakerAdmit('br:late', cfg)).verdict, 'open', 'still waiting for the probe');
        assert.equal(await s.breakerRecord('br:late', false, cfg, first.verdict === 'probe' ? first.probe : undefined), 'open', "the probe's failure reopens it");
        await time.advance(60_050);
        const silent = await s.breakerAdmit('br:late', cfg);
        await time.advance(60_050);
        const second = await s.breakerAdmit('br:late', cfg);
        assert.ok(silent.verdict === 'probe' && second.verdict === 'probe' && silent.probe !== second.probe, 'a probe whose time ran out is replaced by another');
        assert.equal(await s.breakerRecord('br:late', false, cfg), 'half_open', 'a late failure of a call admitted before does not reopen it');
        assert.equal(await s.breakerRecord('br:late', true, cfg, silent.probe), 'half_open', 'nor does the replaced probe decide');
        assert.equal(await s.breakerRecord('br:late', true, cfg, second.probe), 'closed', "the current probe's success closes it");
        assert.deepEqual(await s.breakerAdmit('br:late', cfg), { verdict: 'closed' });
      } finally {
        time.restore();
      }
    });

    // A probe that a later stage held back (an approval pending, an idempotency refusal or replay) never
    // asked the upstream: it decides nothing, and once kept the circuit shut a whole cool-down more.
    test('a probe given back without an outcome lets the next call probe at once; a stale probe number gives back nothing', async () => {
      const s = fresh();
      const cfg = { consecutiveFailures: 1, minCalls: 10, windowMs: 60_000, coolDownMs: 60_000 };
      assert.equal(await s.breakerRecord('br:give', false, cfg), 'open');
      const time = clock({ breaker: 'br:give' });
      try {
        await time.advance(60_050);
        const held = await s.breakerAdmit('br:give', cfg);
        assert.equal(held.verdict, 'probe');
        assert.equal((await s.breakerAdmit('br:give', cfg)).verdict, 'open', 'one probe at a time');
        await s.breakerRelease('br:give', cfg, held.verdict === 'probe' ? held.probe : -1);
        const next = await s.breakerAdmit('br:give', cfg);
        assert.ok(next.verdict === 'probe' && held.verdict === 'probe' && next.probe !== held.probe, `the next call is the probe, numbered anew: ${JSON.stringify(next)}`);
        await s.breakerRelease('br:give', cfg, held.probe);
        assert.equal((await s.breakerAdmit('br:give', cfg)).verdict, 'open', 'the earlier probe gives back nothing: the current one is out');
        assert.equal(await s.breakerRecord('br:give', true, cfg, next.probe), 'closed', "the current probe's success closes it");
        await s.breakerRelease('br:give', cfg, next.probe);
        assert.deepEqual(await s.breakerAdmit('br:give', cfg), { verdict: 'closed' }, 'a closed circuit stays closed');
      } finally {
        time.restore();
      }
    });

    // Redis lets a breaker's key expire (window + cool-down + a minute after its last change); the SQLite
    // store once kept the row it held for ever, so two failures an hour apart opened its breaker.
    test("a breaker's row lapses as long after its last change on both stores: failures further apart do not add up, and a lapsed open breaker is closed", async () => {
      const s = fresh();
      const cfg = { consecutiveFailures: 2, minCalls: 10, windowMs: 1_000, coolDownMs: 1_000 };
      const kept = cfg.windowMs + cfg.coolDownMs + 60_000;
      assert.equal(await s.breakerRecord('br:lapse', false, cfg), 'closed');
      const restore: Array<() => void> = [];
      try {
        restore.push(await lapse('br:lapse', kept));
        assert.equal(await s.breakerRecord('br:lapse', false, cfg), 'closed', 'the first failure lapsed with its row');
        assert.equal(await s.breakerRecord('br:lapse', false, cfg), 'open', 'two failures in a row still open it');
        assert.equal((await s.breakerAdmit('br:lapse', cfg)).verdict, 'open');
        restore.push(await lapse('br:lapse', kept));
        assert.deepEqual(await s.breakerAdmit('br:lapse', cfg), { verdict: 'closed' }, 'a lapsed open breaker is no breaker: closed, no probe');
      } finally {
        for (const r of restore.reverse()) r();
      }
    });

    test('of many concurrent claims of one key exactly one wins; the others see it in flight', async () => {
      const s = fresh();
      const claims = await Promise.all(Array.from({ length: 25 }, (_, i) => s.claimIdempotency('k1', 'digest-a', `owner-${i}`, 5_000, 60_000)));
      const won = claims.filter((c) => c.outcome === 'claimed');
      assert.equal(won.length, 1);
      for (const c of claims) {
        if (c.outcome === 'existing') {
          assert.equal(c.record.state, 'in_flight');
          assert.equal(c.record.digest, 'digest-a');
        }
      }
    });

    test('an idempotency record holds its lease, its answer, and only its owner may finish it', async () => {
      const s = fresh();
      assert.deepEqual(await s.claimIdempotency('k', 'd1', 'me', 1_000, 60_000), { outcome: 'claimed' });
      const first = await s.readIdempotency('k');
      assert.equal(first?.state, 'in_flight');
      assert.equal(first.state === 'in_flight' && first.owner, 'me');
      const lease = first.state === 'in_flight' ? first.leaseUntil : 0;
      await sleep(20);
      await s.renewIdempotency('k', 'me', 5_000);
      const renewed = await s.readIdempotency('k');
      assert.ok(renewed?.state === 'in_flight' && renewed.leaseUntil > lease + 3_000, 'the lease was extended');
      await s.renewIdempotency('k', 'someone-else', 60_000);
      assert.equal(await s.completeIdempotency('k', 'someone-else', '{"forged":true}', 60_000), false, 'not stored, and says so');
      await s.releaseIdempotency('k', 'someone-else');
      const still = await s.readIdempotency('k');
      assert.ok(still?.state === 'in_flight' && still.owner === 'me' && still.leaseUntil < Date.now() + 6_000, 'another owner changed nothing');
      assert.equal(await s.completeIdempotency('k', 'me', '{"answer":1}', 60_000), true);
      assert.deepEqual(await s.readIdempotency('k'), { state: 'done', digest: 'd1', response: '{"answer":1}' });
      const again = await s.claimIdempotency('k', 'd1', 'late', 1_000, 60_000);
      assert.deepEqual(again, { outcome: 'existing', record: { state: 'done', digest: 'd1', response: '{"answer":1}' } });
      await s.releaseIdempotency('k', 'me');
      assert.equal((await s.readIdempotency('k'))?.state, 'done', 'a finished record is never released');
    });

    test('a running call keeps its key past the TTL while its lease is renewed; its answer is then stored', async () => {
      // A call longer than idempotency.ttlSeconds: its record once expired under it, a retry took the key and
      // ran the write a second time, and the first call's answer was silently not stored (3 December).
      const s = fresh();
      await s.claimIdempotency('long', 'd', 'me', 300, 300);
      for (let i = 0; i < 4; i++) {
        await sleep(150);
        await s.renewIdempotency('long', 'me', 300);
      }
      assert.equal((await s.readIdempotency('long'))?.state, 'in_flight', 'alive past its TTL');
      assert.equal((await s.claimIdempotency('long', 'd', 'retry', 300, 300)).outcome, 'existing', 'a retry does not take it');
      assert.equal(await s.completeIdempotency('long', 'me', '{"late":1}', 60_000), true);
      assert.equal((await s.readIdempotency('long'))?.state, 'done');
    });

    test('a released key is free again; a key expires after its TTL', async () => {
      const s = fresh();
      await s.claimIdempotency('r', 'd', 'me', 1_000, 60_000);
      await s.releaseIdempotency('r', 'me');
      assert.equal(await s.readIdempotency('r'), undefined);
      assert.deepEqual(await s.claimIdempotency('r', 'd', 'you', 1_000, 60_000), { outcome: 'claimed' });
      await s.claimIdempotency('short', 'd', 'me', 100, 300);
      await s.completeIdempotency('short', 'me', '{}', 300);
      assert.equal((await s.readIdempotency('short'))?.state, 'done');
      await sleep(400);
      assert.equal(await s.readIdempotency('short'), undefined, 'expired');
      assert.deepEqual(await s.claimIdempotency('short', 'other', 'me', 100, 300), { outcome: 'claimed' });
    });

    test('approvals are stored, replaced, listed and expire', async () => {
      const s = fresh();
      await s.putApproval('a1', '{"id":"a1","state":"pending"}', 60_000);
      await s.putApproval('a2', '{"id":"a2","state":"pending"}', 200);
      await s.putApproval('a1', '{"id":"a1","state":"approved"}', 60_000);
      assert.equal(await s.getApproval('a1'), '{"id":"a1","state":"approved"}');
      assert.deepEqual((await s.listApprovals()).sort(), ['{"id":"a1","state":"approved"}', '{"id":"a2","state":"pending"}']);
      await sleep(300);
      assert.equal(await s.getApproval('a2'), undefined);
      assert.deepEqual(await s.listApprovals(), ['{"id":"a1","state":"approved"}']);
      assert.equal(await s.getApproval('nope'), undefined);
    });

    test('audit appends are numbered and chained, even when many arrive at once', async () => {
      const s = fresh();
      const first = await s.appendAudit(entry(0));
      assert.equal(first.seq, 1);
      const many = await Promise.all(Array.from({ length: 200 }, (_, i) => s.appendAudit(entry(i + 1))));
      assert.deepEqual(
        many.map((r) => r.seq).sort((a, b) => a - b),
        Array.from({ length: 200 }, (_, i) => i + 2),
      );
      const all = await s.readAudit({ limit: 1_000 });
      assert.equal(all.length, 201);
      assert.deepEqual(verifyChain(all, undefined), { ok: true, records: 201, lastSeq: 201, lastHash: all.at(-1)!.hash });
      assert.equal(all[0]!.prev, '0'.repeat(64));
      assert.deepEqual({ seq: all[0]!.seq, hash: all[0]!.hash }, first, 'an append names the place and hash of its record');
      const seventh = all.find((r) => r.callId === 'call-7')!;
      assert.ok(many.some((m) => m.seq === seventh.seq && m.hash === seventh.hash));
      assert.deepEqual(
        { ...seventh, seq: undefined, prev: undefined, hash: undefined },
        { ...entry(7), time: seventh.time, seq: undefined, prev: undefined, hash: undefined },
        'the record holds the entry as given',
      );
    });

    test('audit reads page by sequence and filter by time', async () => {
      const s = fresh();
      const t0 = Date.parse('2026-01-01T00:00:00Z');
      for (let i = 0; i < 10; i++) await s.appendAudit(entry(i, { time: new Date(t0 + i * 60_000).toISOString() }));
      assert.deepEqual((await s.readAudit({ afterSeq: 3, limit: 4 })).map((r) => r.seq), [4, 5, 6, 7]);
      assert.deepEqual((await s.readAudit({ since: t0 + 2 * 60_000, until: t0 + 4 * 60_000 })).map((r) => r.seq), [3, 4, 5]);
    });

    test('retention removes old records and leaves a chain that verifies from its anchor', async () => {
      const s = fresh();
      const old = Date.now() - 10 * 86_400_000;
      for (let i = 0; i < 5; i++) await s.appendAudit(entry(i, { time: new Date(old + i).toISOString() }));
      for (let i = 5; i < 8; i++) await s.appendAudit(entry(i));
      assert.equal(await s.pruneAudit(Date.now() - 86_400_000), 5);
      const anchor = await s.auditAnchor();
      assert.equal(anchor?.seq, 5);
      const left = await s.readAudit({});
      assert.deepEqual(left.map((r) => r.seq), [6, 7, 8]);
      assert.equal(anchor.hash, left[0]!.prev, 'the anchor is the hash the first kept record names');
      assert.equal(verifyChain(left, anchor).ok, true);
      assert.equal(verifyChain(left, undefined).ok, false, 'without the anchor the shortened chain does not verify');
      const next = await s.appendAudit(entry(9));
      assert.equal(next.seq, 9, 'numbering goes on after a prune');
      assert.equal(await s.pruneAudit(Date.now() - 86_400_000), 0, 'nothing more is old enough');
    });

    test('retention that removes every record keeps the chain going from the anchor', async () => {
      const s = fresh();
      const old = Date.now() - 10 * 86_400_000;
      for (let i = 0; i < 3; i++) await s.appendAudit(entry(i, { time: new Date(old + i).toISOString() }));
      assert.equal(await s.pruneAudit(Date.now()), 3);
      const next = await s.appendAudit(entry(3));
      assert.equal(next.seq, 4);
      assert.equal(verifyChain(await s.readAudit({}), await s.auditAnchor()).ok, true);
    });
  });
}

describe('Redis only', () => {
  // Each replica chains onto the head it last wrote and appends with one script that refuses a head that
  // has moved on (redis-store.ts): replicas that append in turn, or at once, each find the other's head
  // stale and chain onto the one the script returns. One chain, no gap, no fork.
  test('replicas appending in turn and at once keep one chain: a stale head is refused and chained onto again', async () => {
    const stores = [0, 1, 2].map(() => openStore({ kind: 'redis', url: redis.url, keyPrefix: 'replicas:', commandTimeoutMs: 2_000 }));
    try {
      const seqs: number[] = [];
      // In turn: every append but the first finds the head another replica left.
      for (let i = 0; i < 9; i++) seqs.push((await stores[i % 3]!.appendAudit(entry(i))).seq);
      assert.deepEqual(seqs, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
      // At once, from all three.
      const together = await Promise.all(Array.from({ length: 60 }, (_, i) => stores[i % 3]!.appendAudit(entry(100 + i))));
      assert.deepEqual([...together.map((a) => a.seq)].sort((x, y) => x - y), Array.from({ length: 60 }, (_, i) => 10 + i));
      // A replica that starts now reads the head once, then chains on.
      const late = openStore({ kind: 'redis', url: redis.url, keyPrefix: 'replicas:', commandTimeoutMs: 2_000 });
      stores.push(late);
      assert.equal((await late.appendAudit(entry(999))).seq, 70);
      const records = await stores[0]!.readAudit({ limit: 1000 });
      assert.equal(records.length, 70);
      const verdict = verifyChain(records, undefined);
      assert.equal(verdict.ok, true, JSON.stringify(verdict));
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  test("windows and buckets run on Redis' clock: a replica whose clock is an hour off counts in the same window", async () => {
    const s = openStore({ kind: 'redis', url: redis.url, keyPrefix: 'clock:', commandTimeoutMs: 2_000 });
    const raw = new Redis(redis.url);
    const realNow = Date.now;
    try {
      const honest = await s.addToWindow('w', 1, 3_600_000);
      const bucket = { rate: 1, perMs: 3_600_000, burst: 1 };
      assert.equal((await s.takeTokens('b', bucket, 1)).allowed, true);
      Date.now = () => realNow() + 3_600_000;
      const skewed = await s.addToWindow('w', 1, 3_600_000);
      const take = await s.takeTokens('b', bucket, 1);
      Date.now = realNow;
      const [sec] = await raw.time();
      const serverWindowEnd = Math.floor((Number(sec) * 1000) / 3_600_000) * 3_600_000 + 3_600_000;
      if (skewed.resetsAt === honest.resetsAt) assert.equal(skewed.total, 2, 'the skewed replica added to the same window');
      assert.equal(skewed.resetsAt, serverWindowEnd, "the window is Redis' window");
      assert.equal(take.allowed, false, 'a clock an hour ahead did not refill the bucket');
    } finally {
      Date.now = realNow;
      raw.disconnect();
      await s.close();
    }
  });

  // counter-math.ts's bucketTake is tested for this in test/unit/store/counter-math.test.ts; the Lua mirrors
  // it. Redis' clock cannot be stepped back here, so the bucket is left as a Redis whose clock ran 60 s
  // ahead wrote it (a failover to a replica behind it): its time is 60 s in this Redis' future.
  test("a token bucket written by a clock 60 s ahead of Redis' (a failover to a replica behind) refills nothing and is never drained below zero", async () => {
    const s = openStore({ kind: 'redis', url: redis.url, keyPrefix: 'step:', commandTimeoutMs: 2_000 });
    const raw = new Redis(redis.url);
    try {
      const bucket = { rate: 10, perMs: 1_000, burst: 20 };
      assert.equal((await s.takeTokens('b', bucket, 1)).remaining, 19);
      const ahead = Number(await raw.hget('step:b:b', 'at')) + 60_000;
      await raw.hset('step:b:b', 'at', String(ahead));
      const stepped = await s.takeTokens('b', bucket, 1);
      assert.deepEqual(stepped, { allowed: true, remaining: 18, retryAfterMs: 0 }, 'once a step back drained the bucket to -581 and refused every call for a minute');
      assert.equal(Number(await raw.hget('step:b:b', 'at')), ahead, 'the later time is kept');
      assert.deepEqual(await s.takeTokens('b', bucket, 1), { allowed: true, remaining: 17, retryAfterMs: 0 }, 'nothing is refilled until Redis catches up with it');
      const ttl = await raw.pttl('step:b:b');
      assert.ok(ttl > 0 && ttl <= 3_000, `the bucket still expires once it would be full (${ttl} ms)`);
    } finally {
      raw.disconnect();
      await s.close();
    }
  });

  test("Redis' calendar windows (Lua civil-date arithmetic) agree with the SQLite store's, across month and year ends and leap days", async () => {
    const raw = new Redis(redis.url);
    try {
      const script = `${WINDOW_OF}\nlocal s, e = window_of(tonumber(ARGV[1]), ARGV[2])\nreturn { string.format('%d', s), string.format('%d', e) }`;
      const instants = ['2026-12-31T23:59:59.999Z', '2027-01-01T00:00:00.000Z', '2028-02-29T12:00:00.000Z', '2028-03-01T00:00:00.000Z', '2100-02-28T23:00:00.000Z', '2026-11-30T15:00:00.000Z', '2000-02-29T00:00:00.000Z'];
      for (const at of instants) {
        for (const window of ['minute', 'hour', 'day', 'month'] as const) {
          const [start, end] = (await raw.eval(script, 0, Date.parse(at), window)) as [string, string];
          assert.deepEqual({ start: Number(start), end: Number(end) }, calendarWindow(Date.parse(at), window), `${window} around ${at}`);
        }
      }
    } finally {
      raw.disconnect();
    }
  });

  test('every key carries the prefix and a TTL (but the audit log, which retention prunes); keys used together share a hash tag', async () => {
    const s = openStore({ kind: 'redis', url: redis.url, keyPrefix: 'ttl-check:', commandTimeoutMs: 2_000 });
    const raw = new Redis(redis.url);
    try {
      await s.addToWindow('w', 1, 60_000);
      await s.takeTokens('b', { rate: 1, perMs: 1_000, burst: 5 }, 1);
      await s.claimIdempotency('i', 'd', 'o', 1_000, 60_000);
      await s.claimIdempotency('j', 'd', 'o', 1_000, 60_000);
      await s.completeIdempotency('j', 'o', '{}', 60_000);
      await s.putApproval('ap', '{}', 60_000);
      // With its index entry: placed in the listing and in its caller's set, each key with a TTL, in one slot.
      await s.putApproval('ap2', '{}', 60_000, { caller: 'api_key\u0000\u0000key:ci', createdAt: Date.now(), pendingUntil: Date.now() + 60_000, liveUntil: Date.now() + 60_000 });
      await s.putPin('pin:up/t', '{}', 60_000);
      await s.appendAudit(entry(1));
      await s.ping();
      const keys = await raw.keys('*');
      const ours = keys.filter((k) => k.startsWith('ttl-check:'));
      assert.ok(ours.includes('ttl-check:ping:{audit}'), 'a ping writes, in the audit chain\'s slot');
      assert.ok(ours.length >= 8, `keys written: ${ours.join(', ')}`);
      for (const k of ours) {
        const ttl = await raw.pttl(k);
        if (k.startsWith('ttl-check:{audit}')) assert.equal(ttl, -1, `${k}: the audit log is kept until retention removes it`);
        else assert.ok(ttl > 0, `${k} has a TTL (${ttl})`);
      }
      // Keys a MULTI touches together must hash to one Cluster slot.
      const slot = async (k: string) => Number(await raw.call('CLUSTER', 'KEYSLOT', k).catch(() => -1));
      const auditKeys = ours.filter((k) => k.includes('{audit}'));
      const approvalKeys = ours.filter((k) => k.includes('{approvals}'));
      if ((await slot('x')) !== -1) {
        assert.equal(new Set(await Promise.all(auditKeys.map(slot))).size, 1);
        assert.equal(new Set(await Promise.all(approvalKeys.map(slot))).size, 1);
      } else {
        for (const group of [auditKeys, approvalKeys]) assert.equal(new Set(group.map((k) => /\{[^}]*\}/.exec(k)?.[0])).size, 1, `one hash tag in ${group.join(', ')}`);
      }
    } finally {
      raw.disconnect();
      await s.close();
    }
  });

  test('a Redis that stops answering fails the operation within the command timeout, and serves again when it answers', async () => {
    const s = openStore({ kind: 'redis', url: redis.url, keyPrefix: 'pause:', commandTimeoutMs: 300 });
    try {
      await s.ping();
      redis.pause();
      // Failed by the bound that fired: ioredis's commandTimeout (store.commandTimeoutMs) names itself. A
      // paused Redis never answers, so without that bound the operation would wait on the connection.
      await assert.rejects(s.addToWindow('w', 1, 60_000), { name: 'StoreUnavailableError', message: 'Redis store (window): Command timed out' });
    } finally {
      redis.resume();
    }
    // Bounded: the connection may be re-established first.
    let served = false;
    for (let i = 0; i < 50 && !served; i++) {
      served = await s.ping().then(
        () => true,
        () => false,
      );
      if (!served) await sleep(100);
    }
    assert.ok(served, 'the store answers again once Redis does');
    await s.close();
  });

  test('through Sentinel: the store finds the primary the sentinels name, and works', async () => {
    const sentinel = await startRedis({ mode: 'sentinel', primaryPort: redis.port });
    const s = openStore({ kind: 'redis', url: 'redis://ignored:1', keyPrefix: 'sentinel:', commandTimeoutMs: 2_000, sentinel: { name: 'primary', nodes: [`127.0.0.1:${sentinel.port}`] } });
    const raw = new Redis(redis.url);
    try {
      await s.appendAudit(entry(1));
      assert.equal((await s.addToWindow('w', 2, 60_000)).total, 2);
      assert.ok((await raw.exists('sentinel:{audit}:head')) === 1, 'the write reached the primary the sentinel names');
    } finally {
      raw.disconnect();
      await s.close();
      await sentinel.stop();
    }
  });

  test('on a Redis Cluster: scripts, MULTI on hash-tagged keys and the audit chain all work', async () => {
    const cluster = await startRedis({ mode: 'cluster' });
    const s = openStore({ kind: 'redis', url: 'redis://ignored:1', keyPrefix: 'gh:', commandTimeoutMs: 2_000, cluster: { nodes: [`127.0.0.1:${cluster.port}`] } });
    try {
      await s.ping();
      assert.equal((await s.addToWindow('w', 1, 60_000)).total, 1);
      assert.equal((await s.takeTokens('b', { rate: 1, perMs: 1_000, burst: 1 }, 1)).allowed, true);
      assert.deepEqual(await s.claimIdempotency('k', 'd', 'o', 1_000, 60_000), { outcome: 'claimed' });
      await s.completeIdempotency('k', 'o', '{"x":1}', 60_000);
      assert.equal((await s.readIdempotency('k'))?.state, 'done');
      await s.putApproval('a', '{"id":"a"}', 60_000);
      assert.deepEqual(await s.listApprovals(), ['{"id":"a"}']);
      const records = await Promise.all(Array.from({ length: 20 }, (_, i) => s.appendAudit(entry(i))));
      assert.equal(records.length, 20);
      assert.equal(verifyChain(await s.readAudit({}), undefined).ok, true);
      assert.equal(await s.pruneAudit(Date.now() + 1_000), 20, 'retention runs its script on the audit keys of one slot');
      assert.equal((await s.auditAnchor())?.seq, 20);
    } finally {
      await s.close();
      await cluster.stop();
    }
  });

  test('TLS and a password through the URL: rediss:// with the CA trusted; a wrong password fails closed', async () => {
    const certs = testCertificates();
    const secured = await startRedis({ password: 'p@ss word', tls: { cert: certs.cert, key: certs.key } });
    assert.match(secured.url, /^rediss:\/\/:p%40ss%20word@127\.0\.0\.1:/);
    const good = openStore({ kind: 'redis', url: secured.url, keyPrefix: 'tls:', commandTimeoutMs: 2_000, tls: { ca: certs.ca } });
    const wrongPassword = openStore({ kind: 'redis', url: secured.url.replace('p%40ss%20word', 'nope'), keyPrefix: 'tls:', commandTimeoutMs: 1_000, tls: { ca: certs.ca } });
    const untrusted = openStore({ kind: 'redis', url: secured.url, keyPrefix: 'tls:', commandTimeoutMs: 1_000 });
    try {
      await good.appendAudit(entry(1));
      assert.equal((await good.addToWindow('w', 1, 60_000)).total, 1);
      await assert.rejects(wrongPassword.ping(), { name: 'StoreUnavailableError' });
      await assert.rejects(untrusted.ping(), { name: 'StoreUnavailableError' }, 'a certificate from an unknown CA is refused');
    } finally {
      await Promise.all([good.close(), wrongPassword.close(), untrusted.close()]);
      await secured.stop();
    }
  });

  // README: "Redis 6.0 or later". The test machine runs 7.x, so the commands 6.2 and 7.0 added are renamed
  // away: a store that sends one (listBudgets sent PEXPIRETIME, 7.0) fails here as it would on 6.0.
  test('on a Redis without the commands added after 6.0, every store operation works, budgets are listed with their window end, and ended windows are not', async () => {
    const newer = ['GETDEL', 'GETEX', 'COPY', 'LMOVE', 'BLMOVE', 'ZRANGESTORE', 'ZUNION', 'ZINTER', 'ZDIFF', 'ZDIFFSTORE', 'ZRANDMEMBER', 'HRANDFIELD', 'SMISMEMBER', 'GEOSEARCH', 'GEOSEARCHSTORE', 'XAUTOCLAIM', 'EXPIRETIME', 'PEXPIRETIME', 'LMPOP', 'BLMPOP', 'ZMPOP', 'BZMPOP', 'SINTERCARD', 'FCALL', 'FCALL_RO', 'EVAL_RO', 'EVALSHA_RO', 'SORT_RO', 'BITFIELD_RO', 'LCS'];
    const old = await startRedis({ config: newer.map((c) => `rename-command ${c} ""`) });
    const s = openStore({ kind: 'redis', url: old.url, keyPrefix: 'six:', commandTimeoutMs: 2_000 });
    const raw = new Redis(old.url);
    try {
      await assert.rejects(raw.call('PEXPIRETIME', 'x'), /unknown command/i, 'the server lacks what 7.0 added');
      await s.ping();
      await s.addToWindow('w', 1, 60_000);
      assert.equal((await s.takeTokens('b', { rate: 1, perMs: 1_000, burst: 2 }, 1)).allowed, true);
      const day = await s.spendBudget('budget:six:alice', 2, 5, 'day');
      await s.spendBudget('budget:six:bob', 1, 5, 'month');
      await s.refundBudget('budget:six:alice', 1, 'day', day.resetsAt);
      assert.deepEqual(await s.listBudgets('budget:six:'), [
        { key: 'budget:six:alice', used: 1, resetsAt: day.resetsAt },
        { key: 'budget:six:bob', used: 1, resetsAt: calendarWindow(Date.now(), 'month').end },
      ]);
      // A window that has ended keeps its key a minute longer: it is not listed. Written as SPEND leaves it.
      const [sec] = await raw.time();
      const ended = Math.floor((Number(sec) * 1000) / 60_000) * 60_000;
      await raw.set(`six:{g:budget:six:carol}|${ended - 60_000}`, '3.000000000', 'PX', ended + 60_000 - Number(sec) * 1000);
      assert.deepEqual((await s.listBudgets('budget:six:')).map((c) => c.key), ['budget:six:alice', 'budget:six:bob']);
      const cfg = { consecutiveFailures: 1, minCalls: 10, windowMs: 60_000, coolDownMs: 60_000 };
      assert.deepEqual(await s.breakerAdmit('br', cfg), { verdict: 'closed' });
      assert.equal(await s.breakerRecord('br', false, cfg), 'open');
      assert.deepEqual(await s.claimIdempotency('i', 'd', 'o', 1_000, 60_000), { outcome: 'claimed' });
      await s.renewIdempotency('i', 'o', 2_000);
      assert.equal(await s.completeIdempotency('i', 'o', '{}', 60_000), true);
      await s.claimIdempotency('j', 'd', 'o', 1_000, 60_000);
      await s.releaseIdempotency('j', 'o');
      assert.equal((await s.readIdempotency('i'))?.state, 'done');
      await s.putApproval('ap', '{"id":"ap"}', 60_000);
      assert.equal(await s.getApproval('ap'), '{"id":"ap"}');
      assert.deepEqual(await s.listApprovals(), ['{"id":"ap"}']);
      await s.appendAudit(entry(1));
      await s.appendAudit(entry(2));
      assert.equal((await s.readAudit({})).length, 2);
      assert.equal(await s.pruneAudit(Date.now() + 1_000), 2);
      assert.equal((await s.auditAnchor())?.seq, 2);
    } finally {
      raw.disconnect();
      await s.close();
      await old.stop();
    }
  });
});

describe('SQLite only', () => {
  // The writer thread costs about 12 MB of RSS (issue 17 item 3): a config that keeps nothing in the store
  // never starts it, and readiness probes check the file system instead until something has used the store.
  test('the writer starts at the first operation; until then readiness checks the file system, and refuses a path it could not open', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-lazy-'));
    const path = join(dir, 'state.db');
    const s = openStore({ kind: 'sqlite', path });
    try {
      await s.ping();
      await s.ping();
      assert.equal(existsSync(path), false, 'no writer opened the file for a probe');
      await s.addToWindow('w:lazy', 1, 60_000);
      assert.equal(existsSync(path), true, 'the first operation started the writer, which made the file');
      await s.ping();
    } finally {
      await s.close();
    }
    await assert.rejects(s.ping(), { name: 'StoreUnavailableError' }, 'closed');
    // A path taken by a directory: the writer could never open it, and the probe says so before anything tries.
    const taken = join(dir, 'taken.db');
    mkdirSync(taken);
    const blocked = openStore({ kind: 'sqlite', path: taken });
    try {
      await assert.rejects(blocked.ping(), (err: Error) => err.name === 'StoreUnavailableError' && /is not a file/.test(err.message));
      await assert.rejects(blocked.addToWindow('w:lazy', 1, 60_000), { name: 'StoreUnavailableError' }, 'and the writer cannot open it either');
    } finally {
      await blocked.close();
    }
    // A file that is not a database (a mounted volume's leftover, a wrong path): refused by the probe, not first by a call.
    const stranger = join(dir, 'notes.db');
    writeFileSync(stranger, 'these are not the rows you are looking for\n');
    const wrong = openStore({ kind: 'sqlite', path: stranger });
    try {
      await assert.rejects(wrong.ping(), (err: Error) => err.name === 'StoreUnavailableError' && /is not a SQLite database/.test(err.message));
    } finally {
      await wrong.close();
    }
    // An empty file, and a database made before, pass.
    const empty = join(dir, 'empty.db');
    writeFileSync(empty, '');
    for (const file of [empty, path]) {
      const ok = openStore({ kind: 'sqlite', path: file });
      await ok.ping();
      await ok.close();
    }
  });
  // This process holds the rows of windows, buckets, budgets and breakers and sends their changes to the
  // writer without waiting (sqlite-store.ts): a change must be on disk once anything asked for after it is.
  test('a change the caller did not wait for is durable by the time a later append is, and after close', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'gatehouse-held-')), 'state.db');
    const s = openStore({ kind: 'sqlite', path });
    await s.spendBudget('budget:held:a', 2, 10, 'day');
    await s.takeTokens('rl:held', { rate: 1, perMs: 60_000, burst: 2 }, 1);
    await s.appendAudit(entry(1));
    const reader = openStore({ kind: 'sqlite', path });
    assert.deepEqual((await reader.listBudgets('budget:held:')).map((c) => [c.key, c.used]), [['budget:held:a', 2]], 'on disk with the append');
    await s.spendBudget('budget:held:a', 3, 10, 'day');
    await s.close();
    assert.deepEqual((await reader.listBudgets('budget:held:')).map((c) => c.used), [5], 'flushed at close');
    const again = openStore({ kind: 'sqlite', path });
    const first = again.takeTokens('rl:held', { rate: 1, perMs: 60_000, burst: 2 }, 1);
    assert.ok(first instanceof Promise, 'a row not held yet is read from the file first');
    assert.equal((await first).allowed, true, 'one token left after the restart');
    // Held now: decided and answered at once, without a promise for the rate-limit stage to await.
    const held = again.takeTokens('rl:held', { rate: 1, perMs: 60_000, burst: 2 }, 1);
    assert.ok(!(held instanceof Promise), 'a held row is answered at once');
    assert.equal(held.allowed, false, 'the bucket survived the restart');
    const spendHeld = again.spendBudget('budget:held:a', 1, 10, 'day');
    assert.ok(spendHeld instanceof Promise, 'the budget row is read from the file first');
    assert.equal((await spendHeld).used, 6);
    const spentAtOnce = again.spendBudget('budget:held:a', 1, 10, 'day');
    assert.ok(!(spentAtOnce instanceof Promise), 'then answered at once');
    assert.equal(spentAtOnce.used, 7);
    const breaker = { consecutiveFailures: 3, minCalls: 10, windowMs: 60_000, coolDownMs: 30_000 };
    const firstAdmit = again.breakerAdmit('br:held', breaker);
    assert.ok(firstAdmit instanceof Promise, 'the breaker row is read from the file first');
    assert.equal((await firstAdmit).verdict, 'closed');
    const admittedAtOnce = again.breakerAdmit('br:held', breaker);
    assert.ok(!(admittedAtOnce instanceof Promise), 'then admitted at once');
    assert.equal(admittedAtOnce.verdict, 'closed');
    await again.close();
    await reader.close();
  });
  // The writer remembers the head it committed and parses the last record only when the file's last record
  // is not that one: a second process appending to the same file (the CLI, a mistaken second replica) must
  // still be chained onto, not forked from.
  test('two stores appending in turn to one file keep one chain', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'gatehouse-two-writers-')), 'state.db');
    const a = openStore({ kind: 'sqlite', path });
    const b = openStore({ kind: 'sqlite', path });
    try {
      const seqs: number[] = [];
      for (let i = 0; i < 6; i++) seqs.push((await (i % 3 === 2 ? b : a).appendAudit(entry(i))).seq);
      assert.deepEqual(seqs, [1, 2, 3, 4, 5, 6]);
      const verdict = verifyChain(await a.readAudit({}), await a.auditAnchor());
      assert.deepEqual(verdict.ok && verdict.records, 6, JSON.stringify(verdict));
    } finally {
      await a.close();
      await b.close();
    }
  });
});
