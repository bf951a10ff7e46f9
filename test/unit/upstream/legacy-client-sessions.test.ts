// The legacy sessions Gatehouse holds on a legacy upstream for modern clients, one per caller and
// capability set (src/upstream/legacy-client-sessions.ts). The capability set is the caller's to choose, so
// the pool is bounded; what it must never do to stay bounded is end a session with calls on it, or end
// another caller's session because one caller declared many sets. Until 3 December the 65th set ended the
// oldest session in the pool, whoever's it was and whatever ran on it. Now: at most 8 per caller, 64 in
// all, the least recently used idle session ended first, and none with anything on it; with none idle, the
// new session is refused (GW_ERR_SESSION_LIMIT), where until 4 December it was opened past the bound.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LegacyClientSessions, type LegacyClientSession } from '../../../src/upstream/legacy-client-sessions.js';
import { createLogger } from '../../../src/log/logger.js';
import { GatewayError } from '../../../src/errors.js';
import type { UpstreamMessages } from '../../../src/pipeline/ports.js';
import type { JsonRpcMessage, JsonRpcRequest } from '../../../src/protocol/jsonrpc.js';

/** A legacy upstream that opens a session per initialize and records which sessions were deleted. */
function upstream(): UpstreamMessages & { opened: number; deleted: string[] } {
  const u = {
    upstream: 'legacy',
    opened: 0,
    deleted: [] as string[],
    post: async (msg: JsonRpcMessage) => {
      const request = msg as JsonRpcRequest;
      if (request.method !== 'initialize') return { status: 202, headers: {}, messages: (async function* () {})() };
      const id = `s${++u.opened}`;
      return { status: 200, headers: { 'mcp-session-id': id }, messages: (async function* () { yield { jsonrpc: '2.0' as const, id: request.id, result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'x', version: '1' } } }; })() };
    },
    openGet: async () => null,
    deleteSession: async (id: string) => void u.deleted.push(id),
  };
  return u;
}

const caps = (i: number): Record<string, unknown> => ({ experimental: { [`set${i}`]: {} } });

test("one caller declaring 70 capability sets ends only its own idle sessions, never another caller's in use", async () => {
  const u = upstream();
  const ended: LegacyClientSession[] = [];
  const pool = new LegacyClientSessions(u, createLogger('warn', () => {}), { onEnd: (s) => void ended.push(s) });
  const victim = await pool.get(caps(0), 'alice');
  const release = pool.use(victim, 'alice');
  for (let i = 0; i < 70; i++) await pool.get(caps(i), 'mallory');
  assert.ok(pool.holds(victim), "alice's session is still the pool's");
  assert.ok(!u.deleted.includes(victim.id!), "alice's session was not ended upstream");
  assert.ok(!ended.includes(victim));
  assert.ok(ended.every((s) => s.owner === 'mallory'), 'only mallory’s sessions were ended');
  // Mallory keeps at most 8 at once: the 62 others were ended, least recently used first.
  assert.equal(ended.length, 62);
  assert.deepEqual(ended.map((s) => s.id), Array.from({ length: 62 }, (_, i) => `s${i + 2}`));
  release();
});

test('past 64 sessions in all, the least recently used idle one is ended; with every one in use, a new one is refused GW_ERR_SESSION_LIMIT and none opened', async () => {
  const u = upstream();
  const ended: LegacyClientSession[] = [];
  const pool = new LegacyClientSessions(u, createLogger('warn', () => {}), { onEnd: (s) => void ended.push(s) });
  const first = await pool.get(caps(0), 'owner0');
  const others: LegacyClientSession[] = [];
  for (let i = 1; i < 64; i++) others.push(await pool.get(caps(0), `owner${i}`));
  // The first opened is the most recently used now; the second is the least.
  await new Promise((r) => setTimeout(r, 5));
  pool.use(first, 'owner0')();
  await pool.get(caps(0), 'owner64');
  assert.deepEqual(ended.map((s) => s.id), [others[0]!.id], 'the least recently used, not the first opened');
  assert.ok(pool.holds(first));
  // Every session busy: the next one is refused, and none is ended under its calls. Until 4 December it
  // was opened past the bound (over stdio, one more child process each).
  const releases = [first, ...others.slice(1)].map((s) => pool.use(s, s.owner));
  const newest = await pool.get(caps(0), 'owner64');
  releases.push(pool.use(newest, 'owner64'));
  const opened = u.opened;
  await assert.rejects(pool.get(caps(0), 'owner65'), (err: GatewayError) => err.code === 'GW_ERR_SESSION_LIMIT' && err.status === 503 && /64 sessions, all in use/.test(err.message));
  assert.equal(u.opened, opened, 'no session was opened for the refused caller');
  assert.equal(ended.length, 1, 'nothing in use was ended');
  // The callers that hold a session are still served by it.
  assert.equal(await pool.get(caps(0), 'owner3'), others[2]);
  for (const r of releases) r();
  // Once idle again, the next arrival ends the least recently used one and is served.
  await pool.get(caps(0), 'owner66');
  assert.equal(ended.length, 2);
  assert.equal(u.opened, opened + 1);
});

test('one caller whose 8 sessions are all in use is refused a 9th capability set; other callers are served, and so is it once one is idle', async () => {
  const u = upstream();
  const ended: LegacyClientSession[] = [];
  const pool = new LegacyClientSessions(u, createLogger('warn', () => {}), { onEnd: (s) => void ended.push(s) });
  // Opened together, as concurrent first calls are: a session still opening cannot be ended either.
  const mine = await Promise.all(Array.from({ length: 8 }, (_, i) => pool.get(caps(i), 'mallory')));
  const releases = mine.map((s) => pool.use(s, 'mallory'));
  await assert.rejects(pool.get(caps(8), 'mallory'), (err: GatewayError) => err.code === 'GW_ERR_SESSION_LIMIT' && err.retryAfterS === 5 && /This caller holds 8 sessions/.test(err.message));
  const opening = Array.from({ length: 8 }, (_, i) => pool.get(caps(100 + i), 'eve'));
  await assert.rejects(pool.get(caps(108), 'eve'), (err: GatewayError) => err.code === 'GW_ERR_SESSION_LIMIT', 'sessions still opening count, and are not ended');
  await Promise.all(opening);
  assert.equal(u.opened, 16);
  assert.ok((await pool.get(caps(8), 'alice')).id, 'another caller is served');
  assert.equal(ended.length, 0);
  releases[3]!();
  const ninth = await pool.get(caps(8), 'mallory');
  assert.equal(ninth.owner, 'mallory');
  assert.deepEqual(ended.map((s) => s.id), [mine[3]!.id], 'its idle session was ended to make room');
  for (const r of releases) r();
});

test("a session Gatehouse opened is not handed to a caller whose 8 sessions are all in use", async () => {
  const u = upstream();
  const pool = new LegacyClientSessions(u, createLogger('warn', () => {}), { shareOwnReads: true });
  const ours = await pool.get(caps(8), '');
  const mine = await Promise.all(Array.from({ length: 8 }, (_, i) => pool.get(caps(i), 'mallory')));
  const releases = mine.map((s) => pool.use(s, 'mallory'));
  await assert.rejects(pool.get(caps(8), 'mallory'), (err: GatewayError) => err.code === 'GW_ERR_SESSION_LIMIT');
  assert.equal(ours.owner, '', "Gatehouse's session stays Gatehouse's");
  assert.ok(pool.holds(ours));
  releases[0]!();
  const taken = await pool.get(caps(8), 'mallory');
  assert.equal(taken, ours, 'handed over once the caller has room');
  assert.equal(taken.owner, 'mallory');
  for (const r of releases) r();
});

test('a session whose initialize fails (refused, or not answered in time) is ended upstream, not left open', async () => {
  // The upstream names the session in the answer's headers, then refuses the handshake or never finishes
  // it: the session was left open upstream (over stdio, a child that did not answer in time ran on, one per
  // failed attempt, until Gatehouse stopped: until 4 December). 2025-11-25/basic/transports.mdx §Session
  // Management: a client that no longer needs a session SHOULD end it with DELETE.
  for (const failing of ['refused', 'timeout'] as const) {
    const deleted: string[] = [];
    let opened = 0;
    const u: UpstreamMessages = {
      upstream: 'legacy',
      post: async (msg: JsonRpcMessage) => {
        const request = msg as JsonRpcRequest;
        const id = `s${++opened}`;
        return {
          status: 200,
          headers: { 'mcp-session-id': id },
          messages: (async function* () {
            if (failing === 'timeout') throw new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', 'did not answer in time', 'legacy');
            yield { jsonrpc: '2.0' as const, id: request.id, error: { code: -32602, message: 'unsupported capabilities' } };
          })(),
        };
      },
      openGet: async () => null,
      deleteSession: async (id: string) => void deleted.push(id),
    };
    const pool = new LegacyClientSessions(u, createLogger('error', () => {}));
    await assert.rejects(pool.get(caps(0), 'alice'));
    await assert.rejects(pool.get(caps(0), 'alice'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(deleted, ['s1', 's2'], `${failing}: each failed session was ended`);
  }
});
