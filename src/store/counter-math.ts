// The arithmetic of fixed windows, token buckets and budgets, on plain rows: the SQLite store runs it (in
// the main thread, on the rows it holds; see sqlite-store.ts), the Redis store runs the same in Lua.

import type { BudgetSpend, TokenBucket, TokenTake, WindowCount } from './store.js';

export interface CounterRow {
  total: number;
  resetsAt: number;
}

export interface BucketRow {
  tokens: number;
  updatedAt: number;
}

/** Adds to a fixed window aligned to the epoch; a row of an earlier window counts as empty. */
export function windowAdd(row: CounterRow | undefined, amount: number, windowMs: number, now: number): { row: CounterRow; result: WindowCount } {
  const resetsAt = now - (now % windowMs) + windowMs;
  const total = (row && row.resetsAt === resetsAt ? row.total : 0) + amount;
  return { row: { total, resetsAt }, result: { total, resetsAt } };
}

/** Takes `cost` tokens if there are enough; the bucket refills at rate/perMs up to burst, and starts full. */
export function bucketTake(row: BucketRow | undefined, bucket: TokenBucket, cost: number, now: number): { row: BucketRow; expiresAt: number; result: TokenTake } {
  // A clock that steps back refills nothing, and the bucket keeps its later time: a negative refill once
  // drained a full bucket below zero, locking callers out for as long as the step.
  const at = row ? Math.max(row.updatedAt, now) : now;
  const refill = row ? ((at - row.updatedAt) * bucket.rate) / bucket.perMs : bucket.burst;
  const tokens = Math.min(bucket.burst, (row?.tokens ?? 0) + refill);
  const expiresAt = at + Math.ceil((bucket.burst * bucket.perMs) / bucket.rate);
  if (tokens >= cost) return { row: { tokens: tokens - cost, updatedAt: at }, expiresAt, result: { allowed: true, remaining: tokens - cost, retryAfterMs: 0 } };
  return { row: { tokens, updatedAt: at }, expiresAt, result: { allowed: false, remaining: tokens, retryAfterMs: Math.ceil(((cost - tokens) * bucket.perMs) / bucket.rate) } };
}

/**
 * A budget counter with `amount` given back, or undefined when there is nothing to change (none spent, or
 * the counter no longer counts). The counter may have been taken over by another window since the spend
 * (budgetSpend: a reload changed the budget's window): the spend is still in it, so it is given back, and
 * the counter keeps the end of the window that holds it now.
 */
export function budgetRefund(row: CounterRow | undefined, amount: number, now: number): CounterRow | undefined {
  if (row === undefined || row.resetsAt <= now || row.total <= 0) return undefined;
  return { total: Math.max(0, budgetSum(row.total, -amount)), resetsAt: row.resetsAt };
}

/**
 * Spends from the counter of the window that ends at `end` unless that passes the limit. The counter is
 * kept under its window's start, so after a reload changed the budget's window (day to month, say) the
 * new window finds the old one's counter when both began at the same instant (the 1st of a month): all of
 * it was spent since then, so within this window, and it counts while the window it was made for has not
 * ended (once it was taken for empty, and the day's spend was spent again against the month). It then
 * ends with this window, refused or not: a daily counter adopted by a month ended that night, and the
 * month counted from zero the next day. As the Redis store's SPEND.
 */
export function budgetSpend(row: CounterRow | undefined, amount: number, limit: number, end: number, now: number): { row?: CounterRow; result: Omit<BudgetSpend, 'resetsInMs'> } {
  const counted = row !== undefined && row.resetsAt > now;
  const used = counted ? row.total : 0;
  const after = budgetSum(used, amount);
  if (after > limit) {
    const result = { allowed: false, used, resetsAt: end };
    return counted && row.resetsAt !== end ? { row: { total: used, resetsAt: end }, result } : { result };
  }
  return { row: { total: after, resetsAt: end }, result: { allowed: true, used: after, resetsAt: end } };
}

/**
 * A budget counter's new total, rounded to 1e-9 so fractional costs add up as written: 100 calls of 0.01
 * fit a limit of 1 (as binary floats they summed to 1.0000000000000007 and the hundredth was refused, where
 * Redis, whose INCRBYFLOAT rounds, admitted it). The Lua scripts round the same way.
 */
export function budgetSum(used: number, amount: number): number {
  return Math.round((used + amount) * 1e9) / 1e9;
}
