// The shared store, for several replicas: Redis through ioredis (TLS and a password through the URL, a CA
// and a client certificate through store.tls; Sentinel and Cluster through ioredis). Counters and buckets are Lua scripts that read Redis `TIME`, so a
// replica with a skewed clock cannot widen a window; every key has a TTL and the configured prefix. Keys
// that scripts touch together share a hash tag, so they land in one Cluster slot. Commands fail at once
// while Redis is unreachable (no offline queue): the pipeline fails closed and recovers when it is back.

import { createRequire } from 'node:module';
import type { ConnectionOptions } from 'node:tls';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { RedisStore as RedisStoreConfig } from '../config/schema.generated.js';
import type { Logger } from '../log/logger.js';
import { takeNotices, type RedisNotice } from './redis-notices.js';
import { redisTlsOptions } from './redis-tls.js';
import type { ApprovalIndexEntry, ApprovalPage } from './approval-index.js';
import { APPROVAL_INDEX_SCRIPTS, approvalsPutSince, countPendingApprovals, expiredApprovals, indexApproval, indexPin, listApprovalPage, listPinPage, listPins, pendingApprovalsOf, putIndexedApproval, putPin, scanApprovals, unindexedPins, type IndexScripted } from './redis-approval-index.js';
import { chainNext, entryJson, storedAuditAnchor, storedAuditRecord, type ChainedRecord } from './audit-chain.js';
import { StoreUnavailableError, type BreakerAdmission, type BreakerSettings, type BreakerState, type BudgetCounter, type BudgetSpend, type CalendarWindow, type AuditAnchor, type AuditEntry, type AuditQuery, type AuditRecord, type IdempotencyClaim, type IdempotencyRecord, type Store, type TokenBucket, type TokenTake, type WindowCount } from './store.js';

/** Fixed window: INCRBYFLOAT on the window's own key, which expires with the window. */
const WINDOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[2])
local resets = now - (now % window) + window
local key = KEYS[1] .. ':' .. resets
local total = redis.call('INCRBYFLOAT', key, ARGV[1])
redis.call('PEXPIREAT', key, resets + 1000)
return { total, tostring(resets) }`;

/** Token bucket refilled by Redis' clock; the hash expires once the bucket would be full again. */
const BUCKET = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate, per, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = burst
-- A clock stepped back (a failover to a replica behind) refills nothing; the bucket keeps its later time.
if state[1] then
  local last = tonumber(state[2])
  if now < last then now = last end
  tokens = math.min(burst, tonumber(state[1]) + (now - last) * rate / per)
end
local allowed = 0
local retry = 0
if tokens >= cost then tokens = tokens - cost allowed = 1 else retry = math.ceil((cost - tokens) * per / rate) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * per / rate) + 1000)
return { allowed, tostring(tokens), retry }`;

/** The current calendar window (UTC, on Redis' clock): minute, hour, day, or month (civil-date arithmetic). */
export const WINDOW_OF = `
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end
local function civil_from_days(z)
  z = z + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local m = mp < 10 and mp + 3 or mp - 9
  if m <= 2 then y = y + 1 end
  return y, m
end
local function window_of(now_ms, kind)
  local size = ({ minute = 60000, hour = 3600000, day = 86400000 })[kind]
  if size then
    local start = now_ms - (now_ms % size)
    return start, start + size
  end
  local y, m = civil_from_days(math.floor(now_ms / 86400000))
  local ny, nm = y, m + 1
  if nm > 12 then ny, nm = y + 1, 1 end
  return days_from_civil(y, m, 1) * 86400000, days_from_civil(ny, nm, 1) * 86400000
end`;

/** Spends from a budget in the current window unless that passes the limit. Returns { allowed, used, resetsAt, resetsInMs }. */
const SPEND = `${WINDOW_OF}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local start, finish = window_of(now, ARGV[3])
local key = KEYS[1] .. '|' .. string.format('%d', start)
local raw = redis.call('GET', key)
local used = 0
-- The counter's window may be another kind that began at the same instant (a reload changed the budget's
-- window): it counts while that window has not ended, and then ends with this one (counter-math.ts
-- budgetSpend says why). Its end is its expiry less the minute SPEND adds (windows end on the minute).
local ends = finish
if raw then
  local ttl = redis.call('PTTL', key)
  ends = ttl < 0 and -1 or math.floor((now + ttl) / 60000 + 0.5) * 60000 - 60000
  if ttl < 0 or ends > now then used = tonumber(raw) else raw = false end
end
local amount, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
-- Rounded to 1e-9, as counter-math.ts budgetSum: fractional costs add up as written.
local after = math.floor((used + amount) * 1e9 + 0.5) / 1e9
-- The wait until the window ends, on this clock (a replica's own may be off).
if after > limit then
  if raw and ends ~= finish then redis.call('PEXPIREAT', key, finish + 60000) end
  return { 0, tostring(used), string.format('%d', finish), string.format('%d', finish - now) }
end
redis.call('SET', key, string.format('%.9f', after))
redis.call('PEXPIREAT', key, finish + 60000)
return { 1, tostring(after), string.format('%d', finish), string.format('%d', finish - now) }`;

/** Gives back ARGV[1] spent in the window that ends at ARGV[3] (ms), never below zero; nothing once it has ended (as counter-math.ts budgetRefund). */
const REFUND = `${WINDOW_OF}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local finish = tonumber(ARGV[3])
local start, ends = window_of(finish - 1, ARGV[2])
if ends ~= finish or now >= finish then return 0 end
local key = KEYS[1] .. '|' .. string.format('%d', start)
local used = tonumber(redis.call('GET', key) or '0')
if used <= 0 then return 0 end
-- The counter may have been taken over by another window since (SPEND): given back all the same, and it
-- keeps that window's end (KEEPTTL); nothing once the window that holds it now has ended.
local ttl = redis.call('PTTL', key)
if ttl >= 0 and math.floor((now + ttl) / 60000 + 0.5) * 60000 - 60000 <= now then return 0 end
local left = math.floor((used - tonumber(ARGV[1])) * 1e9 + 0.5) / 1e9
if left < 0 then left = 0 end
redis.call('SET', key, string.format('%.9f', left), 'KEEPTTL')
return 1`;

/**
 * A budget counter and the end of its window, or nil once that window has ended (on Redis' clock). The
 * key expires a minute after its window ends (SPEND, REFUND) and windows end on the minute, so the end is
 * TIME + PTTL less that minute, rounded to the minute for the millisecond between the two reads. PTTL, not
 * PEXPIRETIME: that came with Redis 7.0, and 6.0 is supported.
 */
const READ_BUDGET = `
local used = redis.call('GET', KEYS[1])
if not used then return false end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then return false end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ends = math.floor((now + ttl) / 60000 + 0.5) * 60000 - 60000
if ends <= now then return false end
return { used, string.format('%d', ends) }`;

/**
 * The breaker state machine of breaker-math.ts, on Redis' clock. ARGV: op, ok, consecutiveFailures,
 * errorRate (or -1), minCalls, windowMs, coolDownMs, and the probe's number ('' for a call that was none).
 */
const BREAKER = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op, ok = ARGV[1], ARGV[2] == '1'
local limit, rate, min_calls = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local window, cool = tonumber(ARGV[6]), tonumber(ARGV[7])
local probe = tonumber(ARGV[8])
local raw = redis.call('GET', KEYS[1])
local d = raw and cjson.decode(raw) or { state = 'closed', consecutive = 0, windowStart = now, calls = 0, failures = 0, ['until'] = 0 }
-- Kept as long as breaker-math.ts's breakerLifetimeMs (the SQLite store's expiry).
local function save() redis.call('SET', KEYS[1], cjson.encode(d), 'PX', window + cool + 60000) end
if op == 'admit' then
  if d.state == 'closed' then return { 'closed', 0 } end
  if now < d['until'] then return { 'open', d['until'] - now } end
  -- Numbered one past the last probe and at least the time: never a number an earlier probe had.
  local n = math.max((d.probe or 0) + 1, now)
  d.state = 'half_open'
  d['until'] = now + cool
  d.probe = n
  save()
  return { 'probe', 0, string.format('%d', n) }
end
if op == 'release' then
  -- A probe given back without an outcome (breaker-math.ts release): its time is up now; the next call probes.
  if d.state == 'half_open' and probe ~= nil and probe == d.probe and now < d['until'] then
    d['until'] = now
    save()
  end
  return { d.state, 0 }
end
if d.state == 'half_open' then
  -- Only the current probe decides; a late answer of another call changes nothing.
  if probe ~= nil and probe == d.probe then
    if ok then
      d = { state = 'closed', consecutive = 0, windowStart = now, calls = 0, failures = 0, ['until'] = 0, probe = d.probe }
    else
      d.state = 'open'
      d.consecutive = d.consecutive + 1
      d['until'] = now + cool
    end
  end
elseif d.state == 'closed' then
  if now - d.windowStart >= window then d.windowStart = now d.calls = 0 d.failures = 0 end
  d.calls = d.calls + 1
  if ok then d.consecutive = 0 else d.failures = d.failures + 1 d.consecutive = d.consecutive + 1 end
  if d.consecutive >= limit or (rate >= 0 and d.calls >= min_calls and d.failures / d.calls >= rate) then
    d.state = 'open'
    d['until'] = now + cool
  end
end
save()
return { d.state, 0 }`;

/** Claims a free key, or returns what holds it. */
const CLAIM = `
local existing = redis.call('GET', KEYS[1])
if existing then return existing end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false`;

/** Stores the answer, if the key is still this owner's call. */
const COMPLETE = `
local existing = redis.call('GET', KEYS[1])
if not existing then return 0 end
local record = cjson.decode(existing)
if record.state ~= 'in_flight' or record.owner ~= ARGV[1] then return 0 end
local done = cjson.encode({ state = 'done', digest = record.digest, response = ARGV[2] })
redis.call('SET', KEYS[1], done, 'PX', ARGV[3])
return 1`;

/** Extends an in-flight call's lease, if it is still this owner's. */
const RENEW = `
local existing = redis.call('GET', KEYS[1])
if not existing then return 0 end
local record = cjson.decode(existing)
if record.state ~= 'in_flight' or record.owner ~= ARGV[1] then return 0 end
record.leaseUntil = tonumber(ARGV[2])
-- Lives at least as long as its lease (ARGV[3] ms from now), as the SQLite store's record.
local ttl = redis.call('PTTL', KEYS[1])
local lease = tonumber(ARGV[3])
if ttl < lease then ttl = lease end
redis.call('SET', KEYS[1], cjson.encode(record), 'PX', ttl)
return 1`;

const RELEASE = `
local existing = redis.call('GET', KEYS[1])
if not existing then return 0 end
local record = cjson.decode(existing)
if record.state == 'in_flight' and record.owner == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`;

/** Stores an approval and indexes it; the index lives as long as its longest-lived approval. */
const PUT_APPROVAL = `
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
return 1`;

/**
 * Appends chained records if the chain's head is still the one they were chained onto (ARGV[1], '' for no
 * head yet): the new head and the records in one step, one round trip where WATCH, GET and MULTI took three.
 * Otherwise nothing is written and the head found comes back, for the caller to chain onto and try again.
 */
const AUDIT_APPEND = `
local head = redis.call('GET', KEYS[1])
if (head or '') ~= ARGV[1] then return { 0, head or false } end
redis.call('SET', KEYS[1], ARGV[2])
for i = 3, #ARGV, 2 do redis.call('ZADD', KEYS[2], ARGV[i], ARGV[i + 1]) end
return { 1 }`;

/**
 * Retention's write: the anchor becomes record ARGV[1] (ARGV[2], its seq and hash) and the records up to it
 * go, unless the anchor is already there or later. Prunes of several replicas (each with its own cut) read
 * the log first and write after: one with an earlier cut that wrote last set the anchor back to an earlier
 * record while the records after it were gone, and the chain no longer verified from it.
 */
const AUDIT_PRUNE = `
local current = redis.call('GET', KEYS[1])
if current and tonumber(cjson.decode(current).seq) >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])`;

/**
 * The ping: a script, as every write that keeps a call's state is (the audit append among them), running
 * each command the gateway's operations use (the scripts above, and the reads of idempotency, approvals and
 * the audit log), on scratch keys of each type: an ACL denies commands one by one, and a user that may run
 * scripts but not ZADD (or any @hash command) passed a ping that was one SET, so the store was up while
 * every governed call failed. Redis checks the ACL of each command a script calls. Each scratch key has a
 * TTL before anything that may be denied runs on it (a script's writes before an error stay), and the hash
 * and sorted set are emptied, so gone, at the end. `budgets show`'s SCAN and doctor's INFO are not here:
 * no call needs them.
 */
const PING = `
local t = redis.call('TIME')
local ttl = tonumber(ARGV[1])
local s, h, z = KEYS[1], KEYS[2], KEYS[3]
local steps = {
  { 'SET', s, '0', 'PX', ttl }, { 'PEXPIRE', s, ttl }, { 'PEXPIREAT', s, tonumber(t[1]) * 1000 + ttl },
  { 'INCRBYFLOAT', s, '0' }, { 'GET', s }, { 'MGET', s }, { 'PTTL', s },
  { 'HSET', h, 'p', '1' }, { 'PEXPIRE', h, ttl }, { 'HMGET', h, 'p' }, { 'DEL', h },
  { 'ZADD', z, 1, 'p' }, { 'PEXPIRE', z, ttl }, { 'ZRANGE', z, 0, -1 }, { 'ZSCORE', z, 'p' }, { 'ZCARD', z },
  { 'EXISTS', z }, { 'ZRANGEBYLEX', z, '-', '+', 'LIMIT', 0, 1 },
  { 'ZRANGEBYSCORE', z, '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0, 1 },
  { 'ZREVRANGEBYSCORE', z, '+inf', '-inf', 'WITHSCORES', 'LIMIT', 0, 1 },
  { 'ZREM', z, 'p' }, { 'ZADD', z, 1, 'p' }, { 'ZREMRANGEBYSCORE', z, '-inf', '+inf' },
}
for _, step in ipairs(steps) do
  local r = redis.pcall(unpack(step))
  if type(r) == 'table' and r.err then
    -- Redis 7.0 words an ACL denial inside a script without naming the command or NOPERM: both are said here.
    if string.find(r.err, 'NOPERM', 1, true) or string.find(r.err, "can't run", 1, true) or string.find(r.err, "can't access", 1, true) then
      return redis.error_reply('NOPERM this Redis user may not run ' .. step[1] .. ' (on keys under the prefix), which the store needs: ' .. r.err)
    end
    -- Any other error keeps its own first word (READONLY, OOM, MISCONF), which the client acts on.
    return redis.error_reply(r.err .. ' (' .. step[1] .. ')')
  end
end
return 1`;

const FIRST_CONNECTION_WAIT_MS = 3_000;
/** How many audit records retention reads, and removes, in one step. */
const AUDIT_PRUNE_PAGE = 500;
/** How long the key a ping writes is kept. */
const PING_KEY_MS = 60_000;
/** How many audit records a read filtered by time takes from Redis at a time, at least. */
const AUDIT_READ_PAGE = 500;
/** Approval documents read (and index entries pruned) per MGET (ZREM) when listing them. */
const LIST_SLICE = 1_000;
/** How many a read bounded in bytes (AuditQuery.maxBytes) fetches at a time, at most. */
const AUDIT_READ_BOUNDED_PAGE = 64;

/**
 * ioredis, loaded when a Redis store is opened: a gateway on SQLite (the default) never pays for it
 * (about 15 MB of RSS; issue 17). It is CommonJS, so it can be required synchronously.
 */
let ioredis: typeof import('ioredis') | undefined;
function loadIoredis(): typeof import('ioredis') {
  return (ioredis ??= createRequire(import.meta.url)('ioredis') as typeof import('ioredis'));
}

type Scripted = IndexScripted & {
  ghPing(key: string, hash: string, sorted: string, ttlMs: number): Promise<number>;
  ghWindow(key: string, amount: number, windowMs: number): Promise<[string, string]>;
  ghBucket(key: string, rate: number, per: number, burst: number, cost: number): Promise<[number, string, number]>;
  ghClaim(key: string, record: string, ttlMs: number): Promise<string | null>;
  ghComplete(key: string, owner: string, response: string, ttlMs: number): Promise<number>;
  ghRelease(key: string, owner: string): Promise<number>;
  ghRenew(key: string, owner: string, leaseUntil: number, leaseMs: number): Promise<number>;
  ghPutApproval(key: string, index: string, id: string, doc: string, ttlMs: number, at: number): Promise<number>;
  ghSpend(key: string, amount: number, limit: number, window: string): Promise<[number, string, string, string]>;
  ghRefund(key: string, amount: number, window: string, resetsAt: number): Promise<number>;
  ghReadBudget(key: string): Promise<[string, string] | null>;
  ghBreaker(key: string, op: 'admit' | 'record' | 'release', ok: string, limit: number, rate: number, minCalls: number, windowMs: number, coolDownMs: number, probe: number | ''): Promise<[string, number, string?]>;
  ghAuditAppend(head: string, log: string, expectedHead: string, newHead: string, ...records: Array<string | number>): Promise<[1] | [0, string | null]>;
  ghAuditPrune(anchor: string, log: string, seq: number, anchorJson: string): Promise<number>;
};

/**
 * One server from the URL; or the primary a set of sentinels names; or a Cluster. The URL's password,
 * database and TLS (rediss://, with `tls`: store.tls) apply in every case, to the sentinels as well
 * (`sentinelTls`: `tls` itself, or its copy with the sentinels' own name). Every connection, a Cluster
 * node's too, shares one of these objects, so what is put in it applies to the next.
 */
function connect(config: Pick<RedisStoreConfig, 'url' | 'keyPrefix' | 'commandTimeoutMs' | 'sentinel' | 'cluster'>, tls: ConnectionOptions | undefined, sentinelTls: ConnectionOptions | undefined): Redis | Cluster {
  const url = new URL(config.url);
  const common: RedisOptions = {
    keyPrefix: config.keyPrefix,
    // Fail fast while Redis is unreachable or silent: governed calls are refused, not queued or held.
    enableOfflineQueue: false,
    // A command under way when the connection breaks may have run (its reply lost): it fails, and is never
    // sent again on the next connection, where it ran twice (a window or budget counted one call twice, an
    // audit batch was appended twice). 0: fail it at once, not after a reconnection attempt.
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: config.commandTimeoutMs,
    // A connection that answers nothing for as long after a command is closed, and a new one made. A timed
    // out command closed nothing: a connection a NAT or load balancer forgot without a reset failed every
    // command (the store down, every call refused) until the kernel gave up on it, some 15 minutes later.
    socketTimeout: config.commandTimeoutMs,
    connectTimeout: Math.max(config.commandTimeoutMs, 1_000),
    retryStrategy: (attempt) => Math.min(2_000, 100 * attempt),
    // A primary that a failover made a replica answers every write with READONLY on a connection that never
    // breaks, so it was kept for good; a new connection reaches the primary the URL's name (or the
    // sentinels) now give. 1: reconnect without sending the command again (it failed; its call fails closed).
    reconnectOnError: (err) => (err.message.startsWith('READONLY') ? 1 : false),
    // No ready check (ioredis sends INFO on every connection for it): a user whose ACL denies INFO had a
    // console.warn outside the log at each connection, and a server without INFO (renamed away, as some
    // managed services do) failed the check, so the connection was dropped and opened again for good and the
    // store never worked. For one server (and a Cluster's nodes, whose cluster state ioredis checks with
    // CLUSTER INFO) its only use is waiting while Redis loads its data, which the guard's write ping
    // (guard.ts) covers: Redis answers LOADING, so the store is down, calls are refused and /readyz says not
    // ready until it is loaded. Kept with Sentinel, below.
    enableReadyCheck: false,
    // Connected by the store once it has taken what ioredis would print (redis-notices.ts).
    lazyConnect: true,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(tls !== undefined ? { tls } : {}),
  };
  const db = Number(url.pathname.slice(1) || 0);
  const nodes = (list: string[]) =>
    list.map((n) => {
      const at = n.lastIndexOf(':');
      return { host: n.slice(0, at), port: Number(n.slice(at + 1)) };
    });
  if (config.cluster) {
    // Cluster has one database; the prefix and the rest apply to every node's connection.
    const { keyPrefix, ...node } = common;
    return new (loadIoredis().Cluster)(nodes(config.cluster.nodes), { keyPrefix, enableOfflineQueue: false, redisOptions: node, clusterRetryStrategy: (attempt) => Math.min(2_000, 100 * attempt) });
  }
  if (config.sentinel) {
    // The ready check also makes sure the server the sentinels named is the primary (ioredis skips it when INFO is refused).
    // With rediss://, the sentinels are asked over TLS too (sentinelTLS): asked in the clear, they were sent
    // store.sentinel.password readable on the wire, and sentinels that listen on a TLS port only (tls-port,
    // port 0) could not be asked at all.
    return new (loadIoredis().Redis)({ ...common, enableReadyCheck: true, db, sentinels: nodes(config.sentinel.nodes), name: config.sentinel.name, ...(config.sentinel.password !== undefined ? { sentinelPassword: config.sentinel.password } : {}), ...(sentinelTls !== undefined ? { enableTLSForSentinelMode: true, sentinelTLS: sentinelTls } : {}) });
  }
  return new (loadIoredis().Redis)({ ...common, db, host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379) });
}

/** Replaces what a shared TLS options object holds, in place: the connections hold the object, not a copy. */
function refill(shared: ConnectionOptions, next: ConnectionOptions): void {
  for (const key of Object.keys(shared)) delete shared[key as keyof ConnectionOptions];
  Object.assign(shared, next);
}

/**
 * What went wrong, in words for the log: ioredis names a broken connection, and a command refused while
 * there is none, after the option that failed it. `connectionError`: what the last connection attempt met.
 */
function describe(err: Error, connectionError: string | undefined): string {
  if (err.name === 'MaxRetriesPerRequestError') return 'the connection broke while the command ran; it may have taken effect, and is not sent again';
  // No offline queue: a command while the client is not connected fails at once with this text.
  if (/isn't (writeable|ready) and enableOfflineQueue options is false/.test(err.message)) {
    return connectionError === undefined ? 'not connected to Redis (connecting)' : `not connected to Redis: ${connectionError}`;
  }
  return err.message;
}

/**
 * ioredis (5.11) leaves the socketTimeout timer of a connection that closed with a command under way
 * running: it fired on the next connection, healthy, and closed it a commandTimeoutMs after every break
 * (the command then under way failed too). The timer is private; cleared when its connection closes.
 */
function clearSocketTimerOnClose(client: Redis): void {
  client.on('close', () => {
    const internal = client as unknown as { socketTimeoutTimer?: NodeJS.Timeout };
    clearTimeout(internal.socketTimeoutTimer);
    internal.socketTimeoutTimer = undefined;
  });
}

/** The URL's password, decoded, if it has one. */
function passwordOf(url: string): string | undefined {
  try {
    const p = new URL(url).password;
    return p === '' ? undefined : decodeURIComponent(p);
  } catch {
    return undefined;
  }
}

/** `text` with `secret` replaced: no Redis error quotes a password, but what is logged must never hold one. */
function withoutSecret(text: string, secret: string | undefined): string {
  return secret === undefined ? text : text.split(secret).join('[REDACTED]');
}

/**
 * The server a connection is to, as `host:port`, for `gatehouse doctor`. A client given its server (store.url,
 * a Cluster's nodes) has it in its options; one that asked the sentinels keeps ioredis' defaults there
 * (localhost:6379), so its socket's peer names the primary the sentinels gave.
 */
function serverOf(node: Redis): string {
  const socket = (node as unknown as { stream?: { remoteAddress?: string; remotePort?: number } }).stream;
  if (Array.isArray(node.options.sentinels) && node.options.sentinels.length > 0 && socket?.remoteAddress !== undefined) {
    const host = socket.remoteAddress.includes(':') ? `[${socket.remoteAddress}]` : socket.remoteAddress;
    return `${host}:${socket.remotePort}`;
  }
  return `${node.options.host}:${node.options.port}`;
}

/** A literal for a SCAN MATCH pattern. */
function escapeGlob(s: string): string {
  return s.replace(/[*?[\]\\]/g, '\\$&');
}

export class RedisStore implements Store {
  readonly kind = 'redis' as const;
  private readonly redis: Scripted;
  private readonly keyPrefix: string;
  /** Audit entries waiting for the append under way to finish; they then go together (group commit). */
  private auditWaiting: Array<{ entry: AuditEntry; resolve(r: AuditAnchor): void; reject(e: Error): void }> = [];
  private auditBusy: Promise<void> | undefined;
  /**
   * The chain's head as this process last wrote or read it (`raw` as stored, '' when there is none yet):
   * the next batch is chained onto it without reading it first, and the append script says when another
   * replica has moved it on.
   */
  private auditHead: { raw: string; anchor: AuditAnchor | undefined } | undefined;
  /** The first connection, waited for (at most a few seconds) before the first command; later outages fail fast. */
  private readonly firstConnection: Promise<void>;
  /**
   * Why the last connection attempt failed (a refused password, an untrusted certificate, a refused
   * connection), until a command is answered: a command made while there is no connection fails with
   * ioredis' words for that alone, and this says why there is none.
   */
  private connectionError: string | undefined;
  /** The TLS options every connection shares (rediss://), or undefined for plain connections. */
  private readonly tls: ConnectionOptions | undefined;
  /** The sentinels' TLS options: `tls` itself, unless store.sentinel.servername names them apart. */
  private readonly sentinelTls: ConnectionOptions | undefined;
  private readonly sentinelServername: string | undefined;

  /** `log`: where a loss of audit records Redis suffered is told (the gateway's); the CLI's reads need none. */
  constructor(
    config: Pick<RedisStoreConfig, 'url' | 'keyPrefix' | 'commandTimeoutMs' | 'sentinel' | 'cluster' | 'tls'>,
    private readonly log?: Logger,
  ) {
    this.tls = new URL(config.url).protocol === 'rediss:' ? redisTlsOptions(config.tls) : undefined;
    this.sentinelServername = config.sentinel?.servername;
    this.sentinelTls = this.tls !== undefined && this.sentinelServername !== undefined ? redisTlsOptions(config.tls, this.sentinelServername) : this.tls;
    this.redis = connect(config, this.tls, this.sentinelTls) as Scripted;
    this.keyPrefix = config.keyPrefix;
    // Connection errors surface on the commands that fail (kept, for describe); the client reconnects on
    // its own. A Cluster tells each node's error apart ('node error'); its own 'error' says less.
    const password = passwordOf(config.url);
    const keep = (err: Error) => void (this.connectionError = withoutSecret(err.message, password));
    this.redis.on('error', (err: Error) => {
      if (this.connectionError === undefined || !(this.redis instanceof loadIoredis().Cluster)) keep(err);
    });
    this.redis.on('node error', keep);
    // Before any connection has sent its AUTH: a Cluster's nodes connect lazily, after '+node'; one server
    // (or the primary the sentinels name) is connected here, once its answers are taken.
    const tell = this.tellNotice.bind(this);
    if (this.redis instanceof loadIoredis().Cluster) {
      this.redis.on('+node', (node: Redis) => {
        clearSocketTimerOnClose(node);
        takeNotices(node, tell);
      });
    } else {
      clearSocketTimerOnClose(this.redis);
      takeNotices(this.redis, tell);
      // A failed first attempt is kept by the 'error' handler above; ioredis goes on reconnecting.
      this.redis.connect().catch(() => {});
    }
    this.firstConnection = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, FIRST_CONNECTION_WAIT_MS);
      timer.unref();
      this.redis.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.redis.defineCommand('ghPing', { numberOfKeys: 3, lua: PING });
    this.redis.defineCommand('ghWindow', { numberOfKeys: 1, lua: WINDOW });
    this.redis.defineCommand('ghBucket', { numberOfKeys: 1, lua: BUCKET });
    this.redis.defineCommand('ghClaim', { numberOfKeys: 1, lua: CLAIM });
    this.redis.defineCommand('ghComplete', { numberOfKeys: 1, lua: COMPLETE });
    this.redis.defineCommand('ghRelease', { numberOfKeys: 1, lua: RELEASE });
    this.redis.defineCommand('ghRenew', { numberOfKeys: 1, lua: RENEW });
    this.redis.defineCommand('ghPutApproval', { numberOfKeys: 2, lua: PUT_APPROVAL });
    for (const [name, script] of Object.entries(APPROVAL_INDEX_SCRIPTS)) this.redis.defineCommand(name, script);
    this.redis.defineCommand('ghSpend', { numberOfKeys: 1, lua: SPEND });
    this.redis.defineCommand('ghRefund', { numberOfKeys: 1, lua: REFUND });
    this.redis.defineCommand('ghReadBudget', { numberOfKeys: 1, lua: READ_BUDGET });
    this.redis.defineCommand('ghBreaker', { numberOfKeys: 1, lua: BREAKER });
    this.redis.defineCommand('ghAuditAppend', { numberOfKeys: 2, lua: AUDIT_APPEND });
    this.redis.defineCommand('ghAuditPrune', { numberOfKeys: 2, lua: AUDIT_PRUNE });
  }

  /** What ioredis would have printed (redis-notices.ts), each said once per store: every connection meets it again. */
  private readonly noticesTold = new Set<RedisNotice>();
  private tellNotice(notice: RedisNotice): void {
    if (this.noticesTold.has(notice)) return;
    this.noticesTold.add(notice);
    const fields = { store: 'redis' };
    switch (notice) {
      case 'password-not-needed':
        return this.log?.warn('the Redis server does not need the password store.url gives (no requirepass, or a default user with nopass): the store connects without authenticating; set a password on the server, or take it out of the URL', fields);
      case 'sentinel-password-not-needed':
        return this.log?.warn('the sentinels do not need the password store.sentinel.password gives: the store asks them without authenticating; set one on the sentinels (requirepass), or leave store.sentinel.password out', fields);
      case 'username-not-supported':
        return this.log?.error('the Redis server refused AUTH with a username (a Redis before 6.0 has no ACL users): the store connects without authenticating; give the password alone in store.url (redis://:PASSWORD@host)', fields);
      case 'info-denied':
        return this.log?.warn("the Redis user may not run INFO (NOPERM), so each connection's check that the server the sentinels named is the primary is skipped (a replica's READONLY answer still reconnects); grant the user +info to have it checked", fields);
    }
  }

  private async run<T>(what: string, op: () => Promise<T>): Promise<T> {
    await this.firstConnection;
    let value: T;
    try {
      value = await op();
    } catch (err) {
      throw new StoreUnavailableError(`Redis store (${what}): ${describe(err as Error, this.connectionError)}`, { cause: err });
    }
    this.connectionError = undefined;
    return value;
  }

  /**
   * One round trip that writes (scratch keys with a TTL) through a script, as Store.ping promises. A Redis
   * that answers but takes no writes (full under noeviction, a read-only replica after a failover, a failed
   * snapshot's MISCONF, a user who may not run scripts, or not one of the commands they run) cannot keep a
   * call's state: a PING it answered kept
   * /readyz ready and had the guard mark the store up a second after each failure, so a call then ran
   * upstream and its audit record failed.
   */
  async ping(): Promise<void> {
    // In the audit chain's hash slot: the write every governed call needs after it has run. In a Cluster,
    // `ping` hashed to another shard, so a full shard holding the chain (its log, the one key without a TTL,
    // fills its shard first) left the store up: once a second a call ran upstream and lost its record.
    await this.run('ping', () => this.redis.ghPing('ping:{audit}', 'ping:{audit}:hash', 'ping:{audit}:sorted', PING_KEY_MS));
  }

  addToWindow(key: string, amount: number, windowMs: number): Promise<WindowCount> {
    return this.run('window', async () => {
      const [total, resets] = await this.redis.ghWindow(`{w:${key}}`, amount, windowMs);
      return { total: Number(total), resetsAt: Number(resets) };
    });
  }

  takeTokens(key: string, bucket: TokenBucket, cost: number): Promise<TokenTake> {
    return this.run('bucket', async () => {
      const [allowed, remaining, retry] = await this.redis.ghBucket(`b:${key}`, bucket.rate, bucket.perMs, bucket.burst, cost);
      return { allowed: allowed === 1, remaining: Number(remaining), retryAfterMs: Number(retry) };
    });
  }

  spendBudget(key: string, amount: number, limit: number, window: CalendarWindow): Promise<BudgetSpend> {
    return this.run('budget', async () => {
      // One hash tag per budget, so the window keys of one budget share a Cluster slot.
      const [allowed, used, resets, resetsIn] = await this.redis.ghSpend(`{g:${key}}`, amount, limit, window);
      return { allowed: allowed === 1, used: Number(used), resetsAt: Number(resets), resetsInMs: Number(resetsIn) };
    });
  }

  refundBudget(key: string, amount: number, window: CalendarWindow, resetsAt: number): Promise<void> {
    return this.run('budget', async () => {
      await this.redis.ghRefund(`{g:${key}}`, amount, window, resetsAt);
    });
  }

  listBudgets(prefix: string): Promise<BudgetCounter[]> {
    return this.run('budget', async () => {
      const keyPrefix = this.keyPrefix;
      const nodes = this.redis instanceof loadIoredis().Cluster ? this.redis.nodes('master') : [this.redis];
      const keys = new Set<string>();
      for (const node of nodes) {
        let cursor = '0';
        for (let rounds = 0; rounds < 10_000; rounds++) {
          // Both literal: a keyPrefix may hold glob characters too (the config refuses only braces).
          const [next, found] = await node.scan(cursor, 'MATCH', `${escapeGlob(keyPrefix)}{g:${escapeGlob(prefix)}*`, 'COUNT', 500);
          for (const k of found) keys.add(k.slice(keyPrefix.length));
          cursor = next;
          if (cursor === '0') break;
        }
      }
      const list = [...keys];
      if (list.length === 0) return [];
      // A window's key outlives it by a minute: an ended window is no current counter (as in SQLite).
      const values = await Promise.all(list.map(async (k) => [k, await this.redis.ghReadBudget(k)] as const));
      return values
        .filter((v): v is readonly [string, [string, string]] => v[1] !== null)
        // `{g:<key>}|<window start>` (spendBudget): the key ends at the last "}|", as it may hold one itself.
        .map(([k, [used, ends]]) => ({ key: k.slice('{g:'.length, k.lastIndexOf('}|')), used: Number(used), resetsAt: Number(ends) }))
        .sort((a, b) => a.key.localeCompare(b.key));
    });
  }

  breakerAdmit(key: string, s: BreakerSettings): Promise<BreakerAdmission> {
    return this.run('breaker', async () => {
      const [verdict, retry, probe] = await this.redis.ghBreaker(`k:${key}`, 'admit', '0', s.consecutiveFailures, s.errorRate ?? -1, s.minCalls, s.windowMs, s.coolDownMs, '');
      if (verdict === 'open') return { verdict: 'open', retryAfterMs: Number(retry) };
      return verdict === 'probe' ? { verdict: 'probe', probe: Number(probe) } : { verdict: 'closed' };
    });
  }

  breakerRecord(key: string, ok: boolean, s: BreakerSettings, probe?: number): Promise<BreakerState> {
    return this.run('breaker', async () => {
      const [state] = await this.redis.ghBreaker(`k:${key}`, 'record', ok ? '1' : '0', s.consecutiveFailures, s.errorRate ?? -1, s.minCalls, s.windowMs, s.coolDownMs, probe ?? '');
      return state as BreakerState;
    });
  }

  breakerRelease(key: string, s: BreakerSettings, probe: number): Promise<void> {
    return this.run('breaker', async () => {
      await this.redis.ghBreaker(`k:${key}`, 'release', '0', s.consecutiveFailures, s.errorRate ?? -1, s.minCalls, s.windowMs, s.coolDownMs, probe);
    });
  }

  claimIdempotency(key: string, digest: string, owner: string, leaseMs: number, ttlMs: number): Promise<IdempotencyClaim> {
    return this.run('idempotency', async () => {
      const record: IdempotencyRecord = { state: 'in_flight', digest, owner, leaseUntil: Date.now() + leaseMs };
      const existing = await this.redis.ghClaim(`i:${key}`, JSON.stringify(record), ttlMs);
      return existing === null ? { outcome: 'claimed' } : { outcome: 'existing', record: JSON.parse(existing) as IdempotencyRecord };
    });
  }

  completeIdempotency(key: string, owner: string, response: string, ttlMs: number): Promise<boolean> {
    return this.run('idempotency', async () => (await this.redis.ghComplete(`i:${key}`, owner, response, ttlMs)) === 1);
  }

  renewIdempotency(key: string, owner: string, leaseMs: number): Promise<void> {
    return this.run('idempotency', async () => {
      await this.redis.ghRenew(`i:${key}`, owner, Date.now() + leaseMs, leaseMs);
    });
  }

  releaseIdempotency(key: string, owner: string): Promise<void> {
    return this.run('idempotency', async () => {
      await this.redis.ghRelease(`i:${key}`, owner);
    });
  }

  readIdempotency(key: string): Promise<IdempotencyRecord | undefined> {
    return this.run('idempotency', async () => {
      const raw = await this.redis.get(`i:${key}`);
      return raw === null ? undefined : (JSON.parse(raw) as IdempotencyRecord);
    });
  }

  putApproval(id: string, doc: string, ttlMs: number, index?: ApprovalIndexEntry): Promise<void> {
    return this.run('approvals', async () => {
      if (index === undefined) await this.redis.ghPutApproval(`{approvals}:${id}`, '{approvals}:index', id, doc, ttlMs, Date.now());
      else await putIndexedApproval(this.redis, id, doc, ttlMs, index);
    });
  }

  indexApproval(id: string, index: ApprovalIndexEntry, ttlMs: number, doc?: string): Promise<void> {
    return this.run('approvals', () => indexApproval(this.redis, id, index, ttlMs, doc));
  }

  expiredApprovals(now: number): Promise<string[]> {
    return this.run('approvals', () => expiredApprovals(this.redis, now));
  }

  unindexedApprovals(since: number): Promise<string[]> {
    return this.run('approvals', () => approvalsPutSince(this.redis, since));
  }

  pendingApprovalsOf(caller: string): Promise<string[]> {
    return this.run('approvals', () => pendingApprovalsOf(this.redis, caller));
  }

  countPendingApprovals(): Promise<number> {
    return this.run('approvals', () => countPendingApprovals(this.redis));
  }

  listApprovalPage(after: string | undefined, limit: number, pendingOnly = false): Promise<ApprovalPage> {
    return this.run('approvals', () => listApprovalPage(this.redis, after, limit, pendingOnly));
  }

  putPin(id: string, doc: string, ttlMs: number): Promise<void> {
    return this.run('approvals', () => putPin(this.redis, id, doc, ttlMs));
  }

  indexPin(id: string): Promise<void> {
    return this.run('approvals', () => indexPin(this.redis, id));
  }

  listPins(): Promise<string[]> {
    return this.run('approvals', () => listPins(this.redis));
  }

  unindexedPins(since: number): Promise<string[]> {
    return this.run('approvals', () => unindexedPins(this.redis, since));
  }

  listPinPage(after: string | undefined, limit: number): Promise<ApprovalPage> {
    return this.run('approvals', () => listPinPage(this.redis, after, limit));
  }

  getApproval(id: string): Promise<string | undefined> {
    return this.run('approvals', async () => (await this.redis.get(`{approvals}:${id}`)) ?? undefined);
  }

  scanApprovals(cursor: string | undefined, count: number): Promise<{ docs: string[]; next: string | undefined }> {
    return this.run('approvals', () => scanApprovals(this.redis, cursor, count));
  }

  listApprovals(): Promise<string[]> {
    return this.run('approvals', async () => {
      const ids = await this.redis.zrange('{approvals}:index', 0, -1);
      const found: string[] = [];
      // In slices: the index holds approvals, their binding pointers, continuations and pins, each kept for
      // days (pins for years), and one MGET of them all spread its keys into one call, which overflows the
      // stack past about 125,000 (every list then failed, and only a list prunes the index).
      for (let start = 0; start < ids.length; start += LIST_SLICE) {
        const slice = ids.slice(start, start + LIST_SLICE);
        const docs = await this.redis.mget(slice.map((id) => `{approvals}:${id}`));
        const gone = slice.filter((_, i) => docs[i] === null);
        if (gone.length > 0) await this.redis.zrem('{approvals}:index', gone);
        for (const d of docs) if (d !== null) found.push(d);
      }
      return found;
    });
  }

  /**
   * Records onto the chain shared by every replica: chained onto the head this process knows, and written
   * with the new head by one script only if that is still the head; if another replica appended in between,
   * chained again onto the head it returns. This process appends one batch at a time (never racing itself);
   * entries that arrive meanwhile form the next batch.
   */
  appendAudit(entry: AuditEntry): Promise<AuditAnchor> {
    return new Promise((resolve, reject) => {
      this.auditWaiting.push({ entry, resolve, reject });
      this.auditBusy ??= this.drainAudit();
    });
  }

  private async drainAudit(): Promise<void> {
    while (this.auditWaiting.length > 0) {
      const batch = this.auditWaiting.splice(0, 500);
      try {
        const records = await this.run('audit', () => this.appendBatch(batch.map((b) => b.entry)));
        batch.forEach((b, i) => b.resolve({ seq: records[i]!.seq, hash: records[i]!.hash }));
      } catch (err) {
        for (const b of batch) b.reject(err as Error);
      }
    }
    this.auditBusy = undefined;
  }

  private async appendBatch(entries: AuditEntry[]): Promise<ChainedRecord[]> {
    const canonical = entries.map((e) => entryJson(e));
    let known = this.auditHead ?? (await this.readAuditHead());
    for (let attempt = 0; attempt < 50; attempt++) {
      let head = known.anchor;
      const records = canonical.map((entryJson) => {
        const record = chainNext(entryJson, head);
        head = { seq: record.seq, hash: record.hash };
        return record;
      });
      const raw = JSON.stringify(head);
      const args: Array<string | number> = [];
      for (const r of records) args.push(r.seq, r.json);
      const reply = await this.redis.ghAuditAppend('{audit}:head', '{audit}:log', known.raw, raw, ...args);
      if (reply[0] === 1) {
        this.auditHead = { raw, anchor: head };
        return records;
      }
      // Another replica appended: chain onto what it left (no head at all: read the anchor too).
      const found = reply[1];
      const knew = known;
      known = found === null ? await this.readAuditHead() : { raw: found, anchor: JSON.parse(found) as AuditAnchor };
      if (knew.raw !== '') this.noticeLoss(knew.anchor!, found === null ? undefined : known.anchor!, known.anchor);
    }
    this.auditHead = undefined;
    throw new Error('the audit chain head kept changing; too many replicas appending at once');
  }

  /**
   * Told when the head this process chained onto is not the store's any more. Another replica's appends move
   * the head on; nothing of Gatehouse's removes it or moves it back (retention moves the anchor only). So a
   * head that is gone, or replaced by an earlier one, means Redis lost data (a restart without AOF, a
   * failover to a replica that was behind, a flush): the records after what was left are gone, and the chain
   * goes on from there without a break `audit verify` could see. Said once per loss, as an error.
   */
  private noticeLoss(knew: AuditAnchor, found: AuditAnchor | undefined, continuesFrom: AuditAnchor | undefined): void {
    if (found !== undefined && found.seq >= knew.seq) return;
    const from = continuesFrom?.seq ?? 0;
    this.log?.error('the audit chain lost records: Redis no longer holds the chain head this replica knew (Redis lost data: a restart without AOF, a failover to a replica that was behind, or a flush); the chain goes on from what is left, and `gatehouse audit verify` cannot see the loss', {
      store: 'redis',
      knownSeq: knew.seq,
      foundSeq: found?.seq ?? null,
      continuesAfter: from,
      lostRecords: `${from + 1}–${knew.seq}`,
    });
  }

  /** The chain's head as stored, or (none yet, or every record pruned) the anchor it continues from. */
  private async readAuditHead(): Promise<{ raw: string; anchor: AuditAnchor | undefined }> {
    const raw = await this.redis.get('{audit}:head');
    return raw === null ? { raw: '', anchor: await this.auditAnchor() } : { raw, anchor: JSON.parse(raw) as AuditAnchor };
  }

  /**
   * The records after `afterSeq` in the time window, at most `limit` of them, as the SQLite store's query
   * gives them: the limit counts records in the window. The log is kept by seq alone, so with a time filter
   * it is read on, a page at a time, until `limit` records matched or it ends (once `limit` records were
   * read and then filtered, and a window after them read as empty: `audit export --since` printed nothing).
   */
  readAudit(query: AuditQuery): Promise<AuditRecord[]> {
    return this.run('audit', async () => {
      const limit = query.limit ?? 1000;
      const since = query.since ?? 0;
      const until = query.until ?? Number.MAX_SAFE_INTEGER;
      const filtered = query.since !== undefined || query.until !== undefined;
      // Bounded in bytes, fewer records are fetched at a time: each fetch is held whole while it is read.
      const page = query.maxBytes !== undefined ? Math.min(limit, AUDIT_READ_BOUNDED_PAGE) : filtered ? Math.max(limit, AUDIT_READ_PAGE) : limit;
      const found: AuditRecord[] = [];
      let bytes = 0;
      let after = query.afterSeq ?? 0;
      while (found.length < limit && (query.maxBytes === undefined || bytes < query.maxBytes)) {
        // With their scores: the next page starts after the last record's place in the log, and a record that
        // cannot be read is named by it.
        const raw = await this.redis.zrangebyscore('{audit}:log', `(${after}`, '+inf', 'WITHSCORES', 'LIMIT', 0, page);
        for (let i = 0; i < raw.length; i += 2) {
          const r = storedAuditRecord(raw[i]!, raw[i + 1]!);
          after = Number(raw[i + 1]);
          const t = Date.parse(r.time);
          if (!(t >= since && t <= until)) continue;
          bytes += raw[i]!.length;
          if (found.push(r) === limit || (query.maxBytes !== undefined && bytes >= query.maxBytes)) break;
        }
        if (raw.length < 2 * page) break;
      }
      return found;
    });
  }

  auditLastSeq(): Promise<number> {
    return this.run('audit', async () => {
      // By score, the record's place in the log.
      const last = await this.redis.zrevrangebyscore('{audit}:log', '+inf', '-inf', 'WITHSCORES', 'LIMIT', 0, 1);
      if (last.length === 2) return Number(last[1]);
      const anchor = await this.redis.get('{audit}:anchor');
      return anchor === null ? 0 : storedAuditAnchor(anchor).seq;
    });
  }

  auditAnchor(): Promise<AuditAnchor | undefined> {
    return this.run('audit', async () => {
      const raw = await this.redis.get('{audit}:anchor');
      return raw === null ? undefined : storedAuditAnchor(raw);
    });
  }

  /**
   * Removes the records older than `beforeMs` from the start of the log, a page at a time: each page's old
   * records go in one short script that moves the anchor onto the last of them, so the chain verifies after
   * every step. Redis runs one command at a time: removing them all at once held every replica's commands
   * for as long as it took (about 100 ms per 200,000 records, seconds for an hour of a busy gateway, past
   * the command timeout). It stops at the first page holding a record to keep, or at the log's end.
   */
  pruneAudit(beforeMs: number): Promise<number> {
    return this.run('audit', async () => {
      let removed = 0;
      let after = '-inf';
      for (;;) {
        const page = (await this.redis.zrangebyscore('{audit}:log', after, '+inf', 'LIMIT', 0, AUDIT_PRUNE_PAGE)).map((r) => JSON.parse(r) as AuditRecord);
        const old = page.filter((r) => Date.parse(r.time) < beforeMs);
        const last = old.at(-1);
        if (last === undefined) return removed;
        removed += await this.redis.ghAuditPrune('{audit}:anchor', '{audit}:log', last.seq, JSON.stringify({ seq: last.seq, hash: last.hash } satisfies AuditAnchor));
        if (old.length < page.length || page.length < AUDIT_PRUNE_PAGE) return removed;
        after = `(${last.seq}`;
      }
    });
  }

  /**
   * The primaries that may drop Gatehouse's keys to free memory: a maxmemory with a policy other than
   * noeviction (volatile-* evicts keys with a TTL, which every key but the audit log has; allkeys-* any).
   * Nothing fails when a key is evicted, so only the settings tell (for `gatehouse doctor`).
   */
  evictingServers(): Promise<Array<{ server: string; maxmemory: number; policy: string }>> {
    return this.run('info', async () => {
      const nodes = this.redis instanceof loadIoredis().Cluster ? this.redis.nodes('master') : [this.redis];
      const found: Array<{ server: string; maxmemory: number; policy: string }> = [];
      for (const node of nodes) {
        const info = await node.info('memory');
        const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
        const maxmemory = Number(field('maxmemory') ?? 0);
        const policy = field('maxmemory_policy') ?? 'noeviction';
        if (maxmemory > 0 && policy !== 'noeviction') found.push({ server: serverOf(node), maxmemory, policy });
      }
      return found;
    });
  }

  /**
   * The primaries that keep no append-only file (`aof_enabled:0`): a restart loses what was written since
   * the last snapshot, if any (the audit records among it, with nothing to show it but the error the
   * gateway then logs), and a replica behind it is all a failover has. For `gatehouse doctor`.
   */
  serversWithoutAof(): Promise<string[]> {
    return this.run('info', async () => {
      const nodes = this.redis instanceof loadIoredis().Cluster ? this.redis.nodes('master') : [this.redis];
      const found: string[] = [];
      for (const node of nodes) {
        const info = await node.info('persistence');
        if (/^aof_enabled:0\s*$/m.test(info)) found.push(serverOf(node));
      }
      return found;
    });
  }

  /**
   * store.tls as a reload gives it (a rotated client certificate, a new CA bundle): every connection made
   * from now on uses it. Those up keep going; their certificates were checked when they were made, and
   * Redis checks none again.
   */
  useTls(tls: RedisStoreConfig['tls']): void {
    if (this.tls === undefined) return;
    refill(this.tls, redisTlsOptions(tls));
    if (this.sentinelTls !== undefined && this.sentinelTls !== this.tls) refill(this.sentinelTls, redisTlsOptions(tls, this.sentinelServername));
  }

  async close(): Promise<void> {
    await this.auditBusy;
    this.redis.disconnect();
  }
}
