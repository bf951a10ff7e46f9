// The Redis store's indexes beside the documents under `{approvals}` (approval-index.ts): approvals by
// caller and all those that may be pending (sets scored by deadline), those the expiry sweep must look at
// (scored by deadline), every approval in the order it was opened (a set ordered by member), and the pins. Each is written by the script that stores its document,
// lives as long as its longest-lived member, and shares the `{approvals}` slot. The store's guard, prefix
// and connection are redis-store.ts's; this file only says what is written and read.

import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { approvalPlace, type ApprovalIndexEntry, type ApprovalPage } from './approval-index.js';

/**
 * Stores an approval with its index entry: indexed as every `{approvals}` document is (KEYS[2], by put
 * time), placed in the listing (KEYS[3], ordered by member, every score 0), and in its caller's set
 * (KEYS[4]) and the set of all (KEYS[5]) of approvals that may be pending, scored by pendingUntil, and
 * placed in the listing of those (KEYS[6]), or out of all three once it cannot be; and in the expiry sweep's
 * set (KEYS[7]) scored by liveUntil, or out of it once decided otherwise, expired or used.
 */
const PUT_INDEXED_APPROVAL = `
local ttl = tonumber(ARGV[3])
if tonumber(ARGV[7]) > 0 then redis.call('ZADD', KEYS[7], ARGV[7], ARGV[1]) else redis.call('ZREM', KEYS[7], ARGV[1]) end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[3], 0, ARGV[5])
for i = 4, 5 do
  if tonumber(ARGV[6]) > 0 then redis.call('ZADD', KEYS[i], ARGV[6], ARGV[1]) else redis.call('ZREM', KEYS[i], ARGV[1]) end
end
if tonumber(ARGV[6]) > 0 then redis.call('ZADD', KEYS[6], 0, ARGV[5]) else redis.call('ZREM', KEYS[6], ARGV[5]) end
for i = 2, 7 do
  if redis.call('EXISTS', KEYS[i]) == 1 and redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
end
return 1`;

/**
 * Indexes an approval stored before the index existed, unless a write with its entry has placed it since
 * (that entry is newer than the document this one was read from) or the document is gone. Its entry in the
 * expiry sweep's set (KEYS[6]) is set while the document stored is still the one it was made from (ARGV[6],
 * its SHA-1, when given; the digest and not the document, as a reindex sends one per approval): approvals
 * placed before that set existed get one, and a stale read puts back none.
 */
const INDEX_APPROVAL = `
local ttl = tonumber(ARGV[4])
local stored = redis.call('GET', KEYS[1])
if ARGV[6] ~= '' and stored and redis.sha1hex(stored) == ARGV[6] then
  if tonumber(ARGV[5]) > 0 then redis.call('ZADD', KEYS[6], ARGV[5], ARGV[3]) else redis.call('ZREM', KEYS[6], ARGV[3]) end
  if redis.call('EXISTS', KEYS[6]) == 1 and redis.call('PTTL', KEYS[6]) < ttl then redis.call('PEXPIRE', KEYS[6], ttl) end
end
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[2], 0, ARGV[1])
if tonumber(ARGV[2]) > 0 then
  redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
  redis.call('ZADD', KEYS[4], ARGV[2], ARGV[3])
  redis.call('ZADD', KEYS[5], 0, ARGV[1])
end
for i = 2, 5 do
  if redis.call('EXISTS', KEYS[i]) == 1 and redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
end
return 1`;

/** Stores a pin as any `{approvals}` document is stored, and keeps it in the pins' set (KEYS[3]). */
const PUT_PIN = `
local ttl = tonumber(ARGV[3])
redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[3], 0, ARGV[1])
for i = 2, 3 do
  if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
end
return 1`;

/** Adds a pin stored before the pins' set existed to it, for as long as its document lives. */
const INDEX_PIN = `
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then return 0 end
redis.call('ZADD', KEYS[2], 0, ARGV[1])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1`;

/** The scripts, as the store defines them on its client. */
export const APPROVAL_INDEX_SCRIPTS = {
  ghPutIndexedApproval: { numberOfKeys: 7, lua: PUT_INDEXED_APPROVAL },
  ghIndexApproval: { numberOfKeys: 6, lua: INDEX_APPROVAL },
  ghPutPin: { numberOfKeys: 3, lua: PUT_PIN },
  ghIndexPin: { numberOfKeys: 2, lua: INDEX_PIN },
} as const;

/** A client with the scripts defined. */
export type IndexScripted = (Redis | Cluster) & {
  ghPutIndexedApproval(key: string, index: string, placed: string, caller: string, pending: string, open: string, expiring: string, id: string, doc: string, ttlMs: number, at: number, place: string, pendingUntil: number, liveUntil: number): Promise<number>;
  ghIndexApproval(key: string, placed: string, caller: string, pending: string, open: string, expiring: string, place: string, pendingUntil: number, id: string, ttlMs: number, liveUntil: number, docSha1: string): Promise<number>;
  ghPutPin(key: string, index: string, pins: string, id: string, doc: string, ttlMs: number, at: number): Promise<number>;
  ghIndexPin(key: string, pins: string, id: string): Promise<number>;
};

/** Every `{approvals}` document by put time: what listApprovals reads (redis-store.ts). */
const EVERY = '{approvals}:index';
/** Every indexed approval, by its place: the listing the admin API pages through. */
const PLACED = '{approvals}:placed';
/**
 * Every indexed approval that may be pending, by its place: the listing of pending ones. Left by a decision
 * (and an expiry the sweep records), so one past its deadline waits there for the sweep; readers judge it.
 */
const OPEN = '{approvals}:open';
/**
 * Every indexed approval the expiry sweep must look at (pending, or approved and not used up), scored by its
 * deadline: the sweep reads the range up to now, not every document. Left once decided otherwise, expired or used.
 */
const EXPIRING = '{approvals}:expiring';
/** Every pin (putPin), so the pins are listed without the rest of `{approvals}`. */
const PINS = '{approvals}:pins';
/** Every indexed approval that may be pending, scored by pendingUntil: what the pending gauge counts. */
const PENDING = '{approvals}:pending';
/** Documents read (and set members pruned) per MGET (ZREM): one MGET of every key overflows past about 125,000. */
const SLICE = 1_000;

/** The set of one caller's approvals that may be pending; the caller's key hashed, as it holds any subject. */
function callerSet(caller: string): string {
  return `{approvals}:caller:${createHash('sha256').update(caller).digest('hex')}`;
}

const docKey = (id: string): string => `{approvals}:${id}`;

export async function putIndexedApproval(redis: IndexScripted, id: string, doc: string, ttlMs: number, index: ApprovalIndexEntry): Promise<void> {
  await redis.ghPutIndexedApproval(docKey(id), EVERY, PLACED, callerSet(index.caller), PENDING, OPEN, EXPIRING, id, doc, ttlMs, Date.now(), approvalPlace(index.createdAt, id), index.pendingUntil, index.liveUntil);
}

export async function indexApproval(redis: IndexScripted, id: string, index: ApprovalIndexEntry, ttlMs: number, doc?: string): Promise<void> {
  const docSha1 = doc === undefined ? '' : createHash('sha1').update(doc, 'utf8').digest('hex');
  await redis.ghIndexApproval(docKey(id), PLACED, callerSet(index.caller), PENDING, OPEN, EXPIRING, approvalPlace(index.createdAt, id), index.pendingUntil, id, ttlMs, index.liveUntil, docSha1);
}

/** The approvals past their deadline that may still be pending or used: the sweep's set up to `now`, in slices. */
export async function expiredApprovals(redis: IndexScripted, now: number): Promise<string[]> {
  return readMembers(redis, EXPIRING, await redis.zrangebyscore(EXPIRING, '(0', now));
}

/**
 * The approvals put since `since` (by the put-time index of every document, which every version keeps):
 * those an older replica stored without their entries are among them. Pins, pointers and continuations
 * are left out by their ids (approvals' begin `ap_`), and not read.
 */
export async function approvalsPutSince(redis: IndexScripted, since: number): Promise<string[]> {
  const ids = (await redis.zrangebyscore(EVERY, since, '+inf')).filter((id) => id.startsWith('ap_'));
  return readMembers(redis, EVERY, ids);
}

export async function pendingApprovalsOf(redis: IndexScripted, caller: string): Promise<string[]> {
  const key = callerSet(caller);
  const now = Date.now();
  // Past their deadline they cannot be pending: pruned, then the rest read.
  await redis.zremrangebyscore(key, '-inf', now);
  const ids = await redis.zrangebyscore(key, `(${now}`, '+inf');
  return readMembers(redis, key, ids);
}

export async function countPendingApprovals(redis: IndexScripted): Promise<number> {
  // Past their deadline they cannot be pending: pruned, then the rest counted.
  await redis.zremrangebyscore(PENDING, '-inf', Date.now());
  return redis.zcard(PENDING);
}

export async function listApprovalPage(redis: IndexScripted, after: string | undefined, limit: number, pendingOnly: boolean): Promise<ApprovalPage> {
  const set = pendingOnly ? OPEN : PLACED;
  const places = await redis.zrangebylex(set, after === undefined ? '-' : `(${after}`, '+', 'LIMIT', 0, limit);
  if (places.length === 0) return { items: [], next: undefined };
  const docs = await redis.mget(places.map((place) => docKey(place.slice(place.indexOf(':') + 1))));
  // Documents past their TTL leave their place behind: pruned as they are met.
  const gone = places.filter((_, i) => docs[i] === null);
  if (gone.length > 0) await redis.zrem(set, gone);
  const items = places.flatMap((at, i) => (docs[i] === null ? [] : [{ at, doc: docs[i]! }]));
  return { items, next: places.length === limit ? places.at(-1) : undefined };
}

export async function putPin(redis: IndexScripted, id: string, doc: string, ttlMs: number): Promise<void> {
  await redis.ghPutPin(docKey(id), EVERY, PINS, id, doc, ttlMs, Date.now());
}

export async function indexPin(redis: IndexScripted, id: string): Promise<void> {
  await redis.ghIndexPin(docKey(id), PINS, id);
}

export async function listPins(redis: IndexScripted): Promise<string[]> {
  return readMembers(redis, PINS, await redis.zrange(PINS, 0, -1));
}

/** The pins put since `since` (by the put-time index every version keeps) that are not in the pins' set. */
export async function unindexedPins(redis: IndexScripted, since: number): Promise<string[]> {
  const ids = (await redis.zrangebyscore(EVERY, since, '+inf')).filter((id) => id.startsWith('pin:'));
  const placed = await Promise.all(ids.map((id) => redis.zscore(PINS, id)));
  return ids.filter((_, i) => placed[i] === null);
}

/** A page of the pins' set (every score 0, so ordered by id), after the id `after`. */
export async function listPinPage(redis: IndexScripted, after: string | undefined, limit: number): Promise<ApprovalPage> {
  const ids = await redis.zrangebylex(PINS, after === undefined ? '-' : `(${after}`, '+', 'LIMIT', 0, limit);
  if (ids.length === 0) return { items: [], next: undefined };
  const docs = await redis.mget(ids.map(docKey));
  // Documents past their TTL leave their member behind: pruned as they are met.
  const gone = ids.filter((_, i) => docs[i] === null);
  if (gone.length > 0) await redis.zrem(PINS, gone);
  const items = ids.flatMap((at, i) => (docs[i] === null ? [] : [{ at, doc: docs[i]! }]));
  return { items, next: ids.length === limit ? ids.at(-1) : undefined };
}

/**
 * A slice of every `{approvals}` document, by ZSCAN of the put-time index: each member there throughout the
 * scan is given at least once, whatever is put or removed meanwhile (a rank range would skip some then).
 */
export async function scanApprovals(redis: IndexScripted, cursor: string | undefined, count: number): Promise<{ docs: string[]; next: string | undefined }> {
  const [next, flat] = await redis.zscan(EVERY, cursor !== undefined && /^[0-9]{1,20}$/.test(cursor) ? cursor : '0', 'COUNT', count);
  const ids = flat.filter((_, i) => i % 2 === 0);
  return { docs: await readMembers(redis, EVERY, ids), next: next === '0' ? undefined : next };
}

/** The documents of a set's members (ids), in slices; members whose document is gone are pruned from the set. */
async function readMembers(redis: IndexScripted, set: string, members: string[]): Promise<string[]> {
  const found: string[] = [];
  for (let start = 0; start < members.length; start += SLICE) {
    const slice = members.slice(start, start + SLICE);
    const docs = await redis.mget(slice.map(docKey));
    const gone = slice.filter((_, i) => docs[i] === null);
    if (gone.length > 0) await redis.zrem(set, gone);
    for (const d of docs) if (d !== null) found.push(d);
  }
  return found;
}
