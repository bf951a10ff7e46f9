// A connection to Redis that breaks after Redis ran a command and before its reply arrived (a failover, a
// proxy or NAT dropping the connection, a TCP reset): the command's effect is in Redis, but the store never
// learnt it. ioredis by default sends such a command again on the new connection, and the store took the
// second answer as the first: a rate-limit window or budget counted one call twice, and an audit append ran
// twice (the script, finding its own head, chained the same records again: every call in the batch was
// recorded twice). The operation fails instead (the gateway refuses the call, 503), it runs at most once,
// and the next operation is served on the new connection.
//
// Real redis-server; between it and the store a TCP relay that drops the connection once, after Redis
// answered the command it was told to watch for (the misbehaving network, on purpose).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { openStore } from '../../src/store/open-store.js';
import type { AuditEntry, Store } from '../../src/store/store.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedisRelay, type RedisRelay } from '../helpers/redis-relay.js';

let redis: TestRedis;
let relay: RedisRelay;

before(async () => {
  redis = await startRedis();
  relay = await startRedisRelay(redis.port);
});
after(async () => {
  await relay.close();
  await redis.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function entry(n: number): AuditEntry {
  return { time: new Date().toISOString(), callId: `call-${n}`, runId: `run-${n}`, subject: 'key:ci', method: 'tools/call', tool: 'echo', toolRef: 'up/echo', outcome: 'ok', latencyMs: 1 };
}

/** Runs `op` with the reply to the command holding `marker` lost; the op's answer, or its error. */
async function withLostReply<T>(marker: string, op: () => Promise<T>): Promise<{ value?: T; error?: Error }> {
  const before = relay.dropped;
  relay.dropAfter(marker);
  try {
    return { value: await op() };
  } catch (err) {
    return { error: err as Error };
  } finally {
    assert.equal(relay.dropped, before + 1, 'the relay dropped the connection after the answer');
  }
}

/** Runs `op` until the store serves it on the new connection (bounded); its answer. */
async function servedAgain<T>(op: () => Promise<T>): Promise<T> {
  for (let i = 0; i < 50; i++) {
    try {
      return await op();
    } catch {
      await sleep(100);
    }
  }
  return op();
}

let prefixes = 0;
function fresh(): Store {
  return openStore({ kind: 'redis', url: relay.url, keyPrefix: `lost-reply${++prefixes}:`, commandTimeoutMs: 2_000 });
}

test('a fixed window whose reply was lost counts the call once, and the caller is told it failed', async () => {
  const s = fresh();
  const raw = new Redis(redis.url);
  try {
    assert.equal((await s.addToWindow('warm', 1, 60_000)).total, 1, 'scripts loaded, connection ready');
    const got = await withLostReply('blip', () => s.addToWindow('blip', 1, 60_000));
    // A resend, if there is one, goes first on the new connection, and Redis runs a connection's commands in
    // order: once another command is answered there, a resend has run.
    await servedAgain(() => s.addToWindow('after', 1, 60_000));
    const keys = await raw.keys(`lost-reply${prefixes}:{w:blip}:*`);
    assert.equal(keys.length, 1);
    assert.equal(Number(await raw.get(keys[0]!)), 1, 'Redis ran the add once');
    assert.equal(got.value, undefined, `the caller was not given the answer of a second run (${JSON.stringify(got.value)})`);
    assert.equal(got.error?.name, 'StoreUnavailableError');
    assert.match(got.error.message, /connection broke while the command ran; it may have taken effect/);
    // The store serves again on the new connection.
    let next;
    for (let i = 0; i < 50 && next === undefined; i++) next = await s.addToWindow('blip', 1, 60_000).catch(() => sleep(100).then(() => undefined));
    assert.equal(next?.total, 2);
  } finally {
    raw.disconnect();
    await s.close();
  }
});

test('a budget spend whose reply was lost is spent once', async () => {
  const s = fresh();
  const raw = new Redis(redis.url);
  try {
    assert.equal((await s.spendBudget('warm', 1, 10, 'day')).allowed, true, 'scripts loaded, connection ready');
    const got = await withLostReply('blip', async () => s.spendBudget('blip', 1, 10, 'day'));
    // As above: once another command is answered on the new connection, a resend has run.
    await servedAgain(async () => s.spendBudget('after', 1, 10, 'day'));
    const keys = await raw.keys(`lost-reply${prefixes}:{g:blip}|*`);
    assert.equal(keys.length, 1);
    assert.equal(Number(await raw.get(keys[0]!)), 1, 'one unit spent for one call');
    assert.equal(got.error?.name, 'StoreUnavailableError');
  } finally {
    raw.disconnect();
    await s.close();
  }
});

test('an audit append whose reply was lost is in the log once, and the chain goes on from it', async () => {
  const s = fresh();
  try {
    assert.equal((await s.appendAudit(entry(0))).seq, 1);
    const got = await withLostReply('call-1', () => s.appendAudit(entry(1)));
    // The next append, answered on the new connection, comes after a resend there (as above).
    assert.equal(got.error?.name, 'StoreUnavailableError', `the append is reported failed, not as ${JSON.stringify(got.value)}`);
    let next;
    for (let i = 0; i < 50 && next === undefined; i++) next = await s.appendAudit(entry(2)).catch(() => sleep(100).then(() => undefined));
    const records = await s.readAudit({});
    assert.deepEqual(
      records.map((r) => `${r.seq}:${r.callId}`),
      ['1:call-0', '2:call-1', '3:call-2'],
      'each call recorded once, in one chain',
    );
    assert.equal(next?.seq, 3);
  } finally {
    await s.close();
  }
});
