// A budget whose window a reload changes (day to month, month to day, hour to minute…). Both stores key a
// budget's counter by its window's start, so the new window finds the old one's counter when the two start
// at the same instant (a day and its month on the 1st, an hour and its first minute). Every unit in that
// counter was spent since that instant, and so within the new window: it counts against the new limit.
// The Redis store counted it; the SQLite store dropped it (it took a counter whose end was not the new
// window's for an empty one), so after a reload on the 1st a caller could spend the new monthly limit on
// top of what it had spent that day, and the two stores disagreed on the same config. And on both, a
// refused spend left the counter with its old window's end: a daily counter adopted by a monthly budget
// ended that night, and the month's spend started again from zero the next day (and `budgets show` gave
// the old end). Now both count it, and the counter takes the current window's end even when refused; a
// refund of a call spent before the reload gives the spend back to it and keeps that end.
// The Redis clock cannot be set here, so its counters are left as Redis writes them at the instant the
// windows share (SPEND: the key, the total, an expiry a minute after the window's end); the SQLite store
// runs on this process's clock, set to the instant.

import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { calendarWindow } from '../../src/store/calendar.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { redisForSuite } from '../helpers/redis.js';

describe('SQLite, its clock at 00:30 on the 1st of a month', () => {
  let dir: string;
  const realNow = Date.now;
  // Next month's 1st, so the counters' ends are in the writer's future too (it lists by its own clock).
  const now = new Date();
  const first = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  let clock = first + 30 * 60_000;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-window-change-'));
    Date.now = () => clock;
  });
  afterEach(() => {
    clock = first + 30 * 60_000;
  });
  after(() => {
    Date.now = realNow;
    rmSync(dir, { recursive: true, force: true });
  });
  let n = 0;
  const open = (name = `state-${++n}.db`) => openStore({ kind: 'sqlite', path: join(dir, name) });

  test('day to month: what was spent today counts against the month', async () => {
    const s = open();
    try {
      assert.equal((await s.spendBudget('budget:b:alice', 3, 10, 'day')).used, 3);
      const month = await s.spendBudget('budget:b:alice', 1, 4, 'month');
      assert.deepEqual({ allowed: month.allowed, used: month.used, resetsAt: month.resetsAt }, { allowed: true, used: 4, resetsAt: calendarWindow(clock, 'month').end }, 'once the reload dropped the 3 and this read 1');
      assert.equal((await s.spendBudget('budget:b:alice', 1, 4, 'month')).allowed, false);
    } finally {
      await s.close();
    }
  });

  test('month to day: what was spent this month (all of it today) counts against the day', async () => {
    const s = open();
    try {
      await s.spendBudget('budget:b:alice', 3, 10, 'month');
      const day = await s.spendBudget('budget:b:alice', 1, 4, 'day');
      assert.deepEqual({ allowed: day.allowed, used: day.used }, { allowed: true, used: 4 });
      assert.deepEqual(await s.listBudgets('budget:b:'), [{ key: 'budget:b:alice', used: 4, resetsAt: calendarWindow(clock, 'day').end }]);
    } finally {
      await s.close();
    }
  });

  test('minute to hour after the minute ended: its counter no longer counts (as on Redis, whose key outlives it a minute)', async () => {
    const s = open();
    try {
      clock = first;
      await s.spendBudget('budget:b:alice', 3, 10, 'minute');
      clock = first + 90_000;
      const hour = await s.spendBudget('budget:b:alice', 1, 10, 'hour');
      assert.deepEqual({ allowed: hour.allowed, used: hour.used, resetsAt: hour.resetsAt }, { allowed: true, used: 1, resetsAt: first + 3_600_000 });
    } finally {
      await s.close();
    }
  });

  test("a call spent under the day, refunded after the month took its counter: given back, the month's end kept", async () => {
    const s = open();
    try {
      const day = await s.spendBudget('budget:b:alice', 2, 10, 'day');
      await s.spendBudget('budget:b:alice', 1, 10, 'month');
      await s.refundBudget('budget:b:alice', 2, 'day', day.resetsAt);
      assert.deepEqual(await s.listBudgets('budget:b:'), [{ key: 'budget:b:alice', used: 1, resetsAt: calendarWindow(clock, 'month').end }]);
    } finally {
      await s.close();
    }
  });

  test("day to month, refused: the counter takes the month's end, and still counts the next day (and after a restart)", async () => {
    const name = 'refused.db';
    let s = open(name);
    try {
      await s.spendBudget('budget:b:alice', 3, 10, 'day');
      const refused = await s.spendBudget('budget:b:alice', 1, 2, 'month');
      assert.deepEqual({ allowed: refused.allowed, used: refused.used }, { allowed: false, used: 3 });
      assert.deepEqual(await s.listBudgets('budget:b:'), [{ key: 'budget:b:alice', used: 3, resetsAt: calendarWindow(clock, 'month').end }]);
      clock += 86_400_000;
      assert.deepEqual((({ allowed, used }) => ({ allowed, used }))(await s.spendBudget('budget:b:alice', 1, 2, 'month')), { allowed: false, used: 3 });
      await s.close();
      s = open(name);
      assert.deepEqual((({ allowed, used }) => ({ allowed, used }))(await s.spendBudget('budget:b:alice', 1, 2, 'month')), { allowed: false, used: 3 }, "the file holds the month's end too");
    } finally {
      await s.close();
    }
  });
});

describe('Redis, counters left as at the instant two windows share', () => {
  const r = redisForSuite();
  const prefix = 'window-change:';
  let s: Store;
  let hour: { start: number; end: number };
  before(async () => {
    s = openStore({ kind: 'redis', url: r.redis.url, keyPrefix: prefix, commandTimeoutMs: 5_000 });
    // Not within ten seconds of the hour's end: every spend below must fall in this hour (bounded wait).
    let nowMs = await redisNow(r.raw);
    if (calendarWindow(nowMs, 'hour').end - nowMs < 10_000) {
      await new Promise((resolve) => setTimeout(resolve, calendarWindow(nowMs, 'hour').end - nowMs + 100));
      nowMs = await redisNow(r.raw);
    }
    hour = calendarWindow(nowMs, 'hour');
  });
  after(() => s.close());

  /** A counter as SPEND leaves it for a window starting at this hour's start and ending at `ends`. */
  async function counter(who: string, used: number, ends: number): Promise<string> {
    const key = `${prefix}{g:budget:b:${who}}|${hour.start}`;
    await r.raw.set(key, used.toFixed(9));
    await r.raw.pexpireat(key, ends + 60_000);
    return key;
  }

  test('day to hour (the day began this hour): what was spent counts against the hour, which it then ends with', async () => {
    const key = await counter('alice', 3, hour.start + 86_400_000);
    const spent = await s.spendBudget('budget:b:alice', 1, 4, 'hour');
    assert.deepEqual({ allowed: spent.allowed, used: spent.used, resetsAt: spent.resetsAt }, { allowed: true, used: 4, resetsAt: hour.end });
    assert.equal(await expiresAt(r.raw, key), hour.end + 60_000);
    assert.equal((await s.spendBudget('budget:b:alice', 1, 4, 'hour')).allowed, false);
  });

  test("day to hour, refused: the counter takes the hour's end (budgets show said the day's)", async () => {
    const key = await counter('bob', 3, hour.start + 86_400_000);
    const refused = await s.spendBudget('budget:b:bob', 1, 2, 'hour');
    assert.deepEqual({ allowed: refused.allowed, used: refused.used }, { allowed: false, used: 3 });
    assert.equal(await expiresAt(r.raw, key), hour.end + 60_000);
    assert.deepEqual(await s.listBudgets('budget:b:bob'), [{ key: 'budget:b:bob', used: 3, resetsAt: hour.end }]);
  });

  test("minute to hour (the minute began this hour), refused: the counter lives to the hour's end, not its minute's", async () => {
    const key = await counter('carol', 3, Math.max(hour.start + 60_000, (await redisNow(r.raw)) + 30_000));
    const refused = await s.spendBudget('budget:b:carol', 1, 2, 'hour');
    assert.deepEqual({ allowed: refused.allowed, used: refused.used }, { allowed: false, used: 3 });
    assert.equal(await expiresAt(r.raw, key), hour.end + 60_000, 'once it expired with the minute, and the hour counted from zero again');
  });

  test("a call spent under the hour, refunded after the day took its counter: given back, the day's end kept", async () => {
    const key = await counter('erin', 3, hour.start + 86_400_000);
    await s.refundBudget('budget:b:erin', 2, 'hour', hour.end);
    assert.equal(await r.raw.get(key), '1.000000000');
    assert.equal(await expiresAt(r.raw, key), hour.start + 86_400_000 + 60_000, "once the refund cut it back to the hour's end, and the day counted from zero the next hour");
  });

  test('minute to hour after the minute ended, its key not yet expired: it no longer counts (as in SQLite)', async () => {
    const ended = Math.floor((await redisNow(r.raw)) / 60_000) * 60_000;
    await counter('dave', 3, ended);
    const spent = await s.spendBudget('budget:b:dave', 1, 10, 'hour');
    assert.deepEqual({ allowed: spent.allowed, used: spent.used }, { allowed: true, used: 1 });
  });
});

async function redisNow(raw: Redis): Promise<number> {
  const [sec, micro] = await raw.time();
  return Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
}

/** When a key expires, to the second (TIME and PTTL are two reads). */
async function expiresAt(raw: Redis, key: string): Promise<number> {
  const ttl = await raw.pttl(key);
  return Math.round(((await redisNow(raw)) + ttl) / 1000) * 1000;
}
