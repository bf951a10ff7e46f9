// A budget counts the calls that run (policy/budget-stage.ts). The stages after it that answer a call without
// running it (an approval still pending, an idempotency replay, an open circuit breaker) give the spend back
// before the answer leaves, so retries while a reviewer decides, or replays of one write, do not eat a
// caller's budget. Real gateway, SQLite store, a v2 SDK upstream that counts what it executes.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { connectV1 } from '../helpers/v1-everything.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
const BOB = 'gh_bob_0123456789abcdefghijklmnopqrstuvwx';
const CAROL = 'gh_carol_0123456789abcdefghijklmnopqrstu';
const DAVE = 'gh_dave_0123456789abcdefghijklmnopqrstuvw';
const ERIN = 'gh_erin_0123456789abcdefghijklmnopqrstuvw';
const ADMIN = 'admin-token-0123456789abcdef';

let up: CountingUpstream;
let gw: TestGateway;
let storePath: string;
before(async () => {
  storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-budget-refund-')), 'gatehouse.db');
  up = await startCountingUpstream('modern');
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }, { id: 'bob', hash: hashKey(BOB), scopes: [] }, { id: 'carol', hash: hashKey(CAROL), scopes: [] }, { id: 'dave', hash: hashKey(DAVE), scopes: [] }, { id: 'erin', hash: hashKey(ERIN), scopes: [] }] },
    store: { kind: 'sqlite', path: storePath },
    admin: { enabled: true, port: 0, token: ADMIN },
    policy: {
      approvals: [
        { id: 'held', tools: ['up/record'], arguments: { item: 'held-*' } },
        { id: 'confirm', tools: ['up/record'], arguments: { item: 'confirm-*' }, by: 'user' },
      ],
      // Month windows: these tests do not cross into the next one, bar a few seconds a month.
      budgets: [{ id: 'three-calls', per: 'subject', tools: ['*'], window: 'month', limit: 3 }],
      breakers: [{ id: 'up-health', per: 'upstream', consecutiveFailures: 1, coolDownSeconds: 600 }],
    },
  });
});
after(async () => {
  await gw.close();
  await up.close();
});

interface ToolResult {
  isError?: boolean;
  content: Array<{ text: string }>;
  structuredContent?: { error?: { code: string } };
  _meta?: Record<string, unknown>;
}
let n = 0;
async function call(token: string, name: string, item: string, idempotencyKey?: string): Promise<ToolResult> {
  const req = modernRequest(++n, 'tools/call', { name, arguments: { item }, ...(idempotencyKey !== undefined ? { _meta: { idempotencyKey } } : {}) });
  const res = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${token}` });
  assert.equal(res.status, 200, res.text);
  return res.json().result as ToolResult;
}
const code = (r: ToolResult): string | undefined => r.structuredContent?.error?.code;
const executed = (item: string): number => up.executions.filter((e) => e.item === item).length;

/**
 * What the key's subject has spent, read from the store file by a second store (`gatehouse budgets show`
 * reads it the same way). The gateway hands its writes to its writer without waiting, so the reading
 * waits (bounded) for `expected`, and returns what it last saw.
 */
async function usedBy(keyId: string, expected: number): Promise<number | undefined> {
  let used: number | undefined;
  for (let i = 0; i < 50; i++) {
    const store = new SqliteStore(storePath);
    try {
      used = (await store.listBudgets('budget:three-calls:subject:')).find((c) => c.key.endsWith(`key:${keyId}`))?.used;
    } finally {
      await store.close();
    }
    if (used === expected) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return used;
}

test('retries while an approval is pending spend nothing; the approved run and the calls after it spend the budget', async () => {
  for (let i = 0; i < 5; i++) assert.equal(code(await call(ALICE, 'record', 'held-1', 'alice-held-0001')), 'approval_pending', `try ${i + 1}`);
  const pending = await call(ALICE, 'record', 'held-1', 'alice-held-0001');
  const id = pending._meta?.['dev.gatehouse/approval_id'] as string;
  const res = await request(`${gw.gateway.adminUrl!}/approvals/${id}/approve`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: '{}' });
  assert.equal(res.statusCode, 200, await res.body.text());

  const ran = await call(ALICE, 'record', 'held-1', 'alice-held-0001');
  assert.equal(ran.isError, undefined, JSON.stringify(ran));
  assert.equal(executed('held-1'), 1);
  // The approved run was the first spend: two more calls fit in the budget of three, the next does not.
  assert.equal((await call(ALICE, 'lookup', 'alice-a')).isError, undefined);
  assert.equal((await call(ALICE, 'lookup', 'alice-b')).isError, undefined);
  assert.equal(code(await call(ALICE, 'lookup', 'alice-c')), 'budget_exhausted');
  assert.equal(await usedBy('alice', 3), 3);
});

test('replays of an idempotent write spend nothing: the budget counts the one run', async () => {
  assert.equal((await call(BOB, 'record', 'bob-1', 'bob-write-0001')).isError, undefined);
  for (let i = 0; i < 4; i++) {
    const replayed = await call(BOB, 'record', 'bob-1', 'bob-write-0001');
    assert.equal(replayed._meta?.['dev.gatehouse/replayed'], true, `replay ${i + 1}: ${JSON.stringify(replayed)}`);
  }
  assert.equal(executed('bob-1'), 1);
  assert.equal((await call(BOB, 'record', 'bob-2', 'bob-write-0002')).isError, undefined);
  assert.equal((await call(BOB, 'record', 'bob-3', 'bob-write-0003')).isError, undefined);
  assert.equal(code(await call(BOB, 'record', 'bob-4', 'bob-write-0004')), 'budget_exhausted');
});

test('a call the user confirms spends once: the question (an InputRequiredResult to a modern client) spends nothing', async () => {
  const client = new V2Client({ name: 'budget-refund-v2', version: '1' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  let asked = 0;
  client.setRequestHandler('elicitation/create', async () => {
    asked++;
    return { action: 'accept', content: { confirm: true } };
  });
  await client.connect(new V2Transport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${DAVE}` } } }));
  try {
    const ran = (await client.callTool({ name: 'record', arguments: { item: 'confirm-1' }, _meta: { idempotencyKey: 'dave-confirm-0001' } })) as ToolResult;
    assert.equal(ran.isError, undefined, JSON.stringify(ran));
    assert.equal(asked, 1, 'the user was asked once');
    assert.equal(executed('confirm-1'), 1);
  } finally {
    await client.close();
  }
  // The question and its answer were two requests; the budget of three saw one call.
  assert.equal(await usedBy('dave', 1), 1);
  assert.equal((await call(DAVE, 'lookup', 'dave-a')).isError, undefined);
  assert.equal((await call(DAVE, 'lookup', 'dave-b')).isError, undefined);
  assert.equal(code(await call(DAVE, 'lookup', 'dave-c')), 'budget_exhausted');
});

test('a legacy client whose user declines the confirmation (asked on the call\'s own stream) spends nothing; one that accepts spends once', async () => {
  let accept = false;
  const { client } = await connectV1(gw.url, {
    name: 'budget-refund-v1',
    timeoutMs: 10_000,
    headers: { authorization: `Bearer ${ERIN}` },
    elicitation: () => (accept ? { action: 'accept', content: { confirm: true } } : { action: 'decline' }),
  });
  try {
    const declined = (await client.callTool({ name: 'record', arguments: { item: 'confirm-declined' } })) as ToolResult;
    assert.equal(code(declined), 'approval_rejected');
    assert.equal(executed('confirm-declined'), 0);
    const used = await usedBy('erin', 0);
    assert.ok(used === 0 || used === undefined, `the declined call gave its spend back: ${used}`);
    accept = true;
    const ran = (await client.callTool({ name: 'record', arguments: { item: 'confirm-accepted' } })) as ToolResult;
    assert.equal(ran.isError, undefined, JSON.stringify(ran));
    assert.equal(await usedBy('erin', 1), 1);
  } finally {
    await client.close();
  }
});

// Last: the open circuit holds every later call of this gateway back.
test('calls an open circuit breaker holds back spend nothing; the failed call that opened it did reach the upstream, and counts', async () => {
  up.failing = true;
  try {
    const req = modernRequest(++n, 'tools/call', { name: 'lookup', arguments: { item: 'carol-fails' } });
    const failed = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${CAROL}` });
    assert.equal(failed.status, 502, failed.text);
    for (let i = 0; i < 4; i++) assert.equal(code(await call(CAROL, 'lookup', `carol-held-${i}`)), 'upstream_unavailable', `try ${i + 1}`);
    const held = up.received.filter((b) => b.includes('carol-held-')).length;
    assert.equal(held, 0, 'the breaker kept them from the upstream');
  } finally {
    up.failing = false;
  }
  // The store shows one spend (the failed call), however many the breaker refused.
  assert.equal(await usedBy('carol', 1), 1);
});
