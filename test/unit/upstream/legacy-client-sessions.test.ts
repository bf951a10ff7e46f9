// The legacy sessions Gatehouse holds on a legacy upstream for modern clients, one per caller and
// capability set (src/upstream/legacy-client-sessions.ts). The capability set is the caller's to choose, so
// the pool is bounded; what it must never do to stay bounded is end a session with calls on it, or end
// another caller's session because one caller declared many sets. Until 3 December the 65th set ended the
// oldest session in the pool, whoever's it was and whatever ran on it. Now: at most 8 per caller, 64 in
// all, the least recently used idle session ended first, and none with anything on it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LegacyClientSessions, type LegacyClientSession } from '../../../src/upstream/legacy-client-sessions.js';
import { createLogger } from '../../../src/log/logger.js';
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

test('past 64 sessions in all, the least recently used idle one is ended; one in use is kept, the pool then holding more', async () => {
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
  // Every session busy: the next one is opened and none is ended under its calls.
  const releases = [first, ...others.slice(1)].map((s) => pool.use(s, s.owner));
  const newest = await pool.get(caps(0), 'owner64');
  releases.push(pool.use(newest, 'owner64'));
  await pool.get(caps(0), 'owner65');
  assert.equal(ended.length, 1, 'nothing in use was ended');
  for (const r of releases) r();
  // Once idle again, the next arrival brings the pool back within its bound.
  await pool.get(caps(0), 'owner66');
  assert.equal(ended.length, 3);
});
