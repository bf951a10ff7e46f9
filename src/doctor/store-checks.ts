// The store a deployment needs writable. SQLite: an existing file is opened the way the gateway opens it,
// and its directory must take the journal files; a missing file is not created, only its directory judged.
// Redis: PING, then one write of a scratch key that expires at once, through the store's own code; and
// a warning when Redis would evict Gatehouse's keys to free memory, or keeps no append-only file (a restart
// loses the audit records since the last snapshot), which no operation would show; when INFO, which both
// need, is refused (an ACL without +info) or unknown, a warning that they were not checked instead of a failure.
// What the store itself notices on connecting (a password the server does not need, so nothing is
// authenticated) is a warning of the row too: the store tells it through its logger, kept here. With
// Sentinel, each sentinel is asked a PING too (sentinel-probe.ts), over TLS or not as the store asks them: one
// that fails is the cause when none answered, and a warning when the store came up through another.

import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { StoreConfig } from '../config/types.js';
import { openStore } from '../store/open-store.js';
import { RedisStore } from '../store/redis-store.js';
import { finding, messageOf, withDeadline, type CheckLimits, type Finding } from './finding.js';
import { noticeLog } from './notice-log.js';
import { redisHint, sentinelProbeHint } from './redis-hint.js';
import { failingSentinels, sentinelsUnreachable, type FailingSentinel } from './sentinel-probe.js';

export async function checkStore(config: StoreConfig, limits: CheckLimits): Promise<Finding> {
  try {
    return await withDeadline(config.kind === 'redis' ? checkRedis(config) : checkSqlite(resolve(config.path)), limits.timeoutMs, 'checking the store');
  } catch (err) {
    return finding('store', 'fail', messageOf(err), config.kind === 'redis' ? 'is Redis up and reachable from here?' : 'is the disk answering?');
  }
}

async function checkSqlite(path: string): Promise<Finding> {
  const data = { kind: 'sqlite', path };
  const file = await stat(path).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
  if (file === undefined) {
    const { dir, missing, isDir } = await nearestExisting(dirname(path));
    if (!isDir) return finding('store', 'fail', `SQLite: ${dir} is in the way of ${path}: it is not a directory`, 'point store.path at a file in a directory', data);
    if (!(await writable(dir))) {
      return finding('store', 'fail', `SQLite: ${path} does not exist, and ${dir} is not writable by this user, so it cannot be created`,
        `make ${dir} writable for this user, or point store.path at a writable directory`, data);
    }
    return finding('store', 'ok', `SQLite: will be created at ${path}${missing ? ' (with its directory)' : ''}`, undefined, { ...data, exists: false });
  }
  if (!file.isFile()) return finding('store', 'fail', `SQLite: ${path} is not a file`, 'point store.path at a database file', data);
  const dir = dirname(path);
  if (!(await writable(path))) return finding('store', 'fail', `SQLite: ${path} is not writable by this user`, 'give this user write access to the file (and its directory)', data);
  // WAL mode keeps two files beside the database, which the gateway must be able to create.
  if (!(await writable(dir))) return finding('store', 'fail', `SQLite: ${dir} is not writable by this user (the journal files live beside the database)`, `make ${dir} writable for this user`, data);
  const store = openStore({ kind: 'sqlite', path });
  try {
    await store.ping();
  } catch (err) {
    return finding('store', 'fail', `SQLite: ${path} does not open: ${messageOf(err)}`, 'is it a Gatehouse database, undamaged? (gatehouse audit verify reads it)', data);
  } finally {
    await store.close().catch(() => {});
  }
  return finding('store', 'ok', `SQLite: ${path} opens and is writable`, undefined, { ...data, exists: true });
}

async function checkRedis(config: StoreConfig & { kind: 'redis' }): Promise<Finding> {
  const where = config.cluster ? `Redis Cluster (${config.cluster.nodes.join(', ')})` : config.sentinel ? `Redis through Sentinel "${config.sentinel.name}"` : `Redis at ${redisAddress(config.url)}`;
  const data = { kind: 'redis', where, keyPrefix: config.keyPrefix };
  const told = noticeLog();
  const store = new RedisStore(config, told.log);
  let evicting: Awaited<ReturnType<RedisStore['evictingServers']>>;
  let withoutAof: string[];
  /** Why INFO, which the warnings below need, could not be read; the store works without it. */
  let noInfo: string | undefined;
  /** Sentinels that do not answer, though the store found its primary through another. */
  let sentinelsFailing: FailingSentinel[];
  try {
    await store.ping();
    // A counter in a one-second window: one real write with an expiry, gone a second later.
    await store.addToWindow(`doctor:${process.pid}:${Date.now()}`, 1, 1000);
    try {
      evicting = await store.evictingServers();
      withoutAof = await store.serversWithoutAof();
    } catch (err) {
      // An ACL without +info (NOPERM) or a server without the command: the store is fine, the check is blind.
      if (!/NOPERM|unknown command/i.test(messageOf(err))) throw err;
      noInfo = messageOf(err);
      evicting = [];
      withoutAof = [];
    }
    // ioredis stops at the first sentinel that answers: the others, needed once it is down, are asked here.
    sentinelsFailing = await failingSentinels(config);
  } catch (err) {
    // ioredis keeps no cause when no sentinel answers: asking each finds it (a certificate, a port that is silent).
    const failing = sentinelsUnreachable(messageOf(err)) ? await failingSentinels(config) : [];
    if (failing.length > 0) {
      return finding('store', 'fail', `${where}: ${messageOf(err).replace(/\.$/, '')}; ${failing.map(sentinelFails).join('; ')}`, failing.map(sentinelHint).join('; and '), data);
    }
    // The remedy follows the cause: a full Redis, a replica or an untrusted certificate is no store.url typo.
    return finding('store', 'fail', `${where}: ${messageOf(err)}`, redisHint(messageOf(err), config.sentinel !== undefined), data);
  } finally {
    await store.close().catch(() => {});
  }
  // One finding for the store: each risk found is a sentence of it, with its own remedy.
  const details: string[] = [];
  const hints: string[] = [];
  const evicts = evicting[0];
  if (evicts !== undefined) {
    // Every key but the audit log has a TTL: idempotency records, budget counters, breakers, approvals.
    details.push(`${evicts.server} has maxmemory ${evicts.maxmemory} bytes with maxmemory-policy ${evicts.policy}: when memory runs short Redis drops Gatehouse's keys without an error (a stored write's answer, so a retry runs it again; a budget's counter, so spending starts again)`);
    hints.push('set maxmemory-policy noeviction on the Redis Gatehouse uses (a full Redis then refuses writes, and Gatehouse refuses calls instead of losing their state), or give it no maxmemory');
  }
  if (withoutAof.length > 0) {
    details.push(`${withoutAof.join(', ')} ${withoutAof.length === 1 ? 'has' : 'have'} persistence off (aof_enabled:0): a restart loses what was written since the last snapshot, if any (audit records, whose chain then starts again from what is left; stored answers; budget counters)`);
    hints.push('set appendonly yes (appendfsync everysec or always) on the Redis Gatehouse uses');
  }
  for (const notice of told.notices) {
    // Each notice ends with its remedy after the last "; " (store/redis-store.ts tellNotice).
    const cut = notice.lastIndexOf('; ');
    details.push(cut < 0 ? notice : notice.slice(0, cut));
    hints.push(cut < 0 ? 'see the detail' : notice.slice(cut + 2));
  }
  if (sentinelsFailing.length > 0) {
    details.push(`the primary was found through a sentinel, but ${sentinelsFailing.map(sentinelFails).join('; ')}: once the sentinels that answer are down, the store is not reached`);
    hints.push(sentinelsFailing.map(sentinelHint).join('; and '));
  }
  if (noInfo !== undefined) {
    details.push(`PING answered and a scratch key was written, but Gatehouse could not read INFO (${noInfo}), so whether Redis would evict Gatehouse's keys (maxmemory-policy) or keeps an append-only file (appendonly) was not checked`);
    hints.push('grant this Redis user +info (ACL SETUSER <user> +info) and run doctor again, or check on the server that maxmemory-policy is noeviction (or maxmemory 0) and appendonly is yes');
  }
  if (details.length > 0) {
    return finding('store', 'warn', `${where}: ${details.join('; and ')}`, hints.join('; and '), { ...data, evicting, withoutAof, notices: told.notices, failingSentinels: sentinelsFailing.map((s) => s.node) });
  }
  return finding('store', 'ok', `${where}: PING answered, a scratch key was written (with a TTL) under "${config.keyPrefix}"`, undefined, data);
}

function sentinelFails(sentinel: FailingSentinel): string {
  return `a ${sentinel.tls ? 'TLS ' : ''}connection to sentinel ${sentinel.node} fails: ${sentinel.error}`;
}

/** Each failing sentinel's hint names it: two may fail for two causes (one down, one with a certificate of another name). */
function sentinelHint(sentinel: FailingSentinel): string {
  return `sentinel ${sentinel.node}: ${sentinelProbeHint(sentinel.error, sentinel.tls)}`;
}

/** The closest path that exists at or above `dir` (`isDir` false: a file is in the way); `missing` when `dir` itself does not. */
async function nearestExisting(dir: string): Promise<{ dir: string; missing: boolean; isDir: boolean }> {
  let at = dir;
  for (;;) {
    const found = await stat(at).then((s) => s, () => undefined);
    if (found || dirname(at) === at) return { dir: at, missing: at !== dir, isDir: found?.isDirectory() ?? false };
    at = dirname(at);
  }
}

async function writable(path: string): Promise<boolean> {
  return access(path, constants.W_OK).then(() => true, () => false);
}

/** host:port/db of a Redis URL, without its password. */
function redisAddress(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}
