// The bound on pending approvals per caller (approvals.maxPendingPerCaller). Without it one caller could
// open any number of approvals, each held in the store and in the reviewers' inbox until its deadline. A
// real upstream (v2 SDK server that counts what it executes) sits behind gateways whose policy.approvals
// hold back its `record` tool; the reviewer decides through the admin API. The count comes from the store,
// so two replicas on one Redis enforce one bound.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashKey } from '../../src/auth/key-hash.js';
import { validateConfigObject } from '../../src/config/load.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { adminRequest } from '../helpers/http.js';
import { approvalIdOf, callTool, codeOf, type ToolResult } from '../helpers/tool-call.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
const BOB = 'gh_bob_0123456789abcdefghijklmnopqrstuvwx';
const CAROL = 'gh_carol_0123456789abcdefghijklmnopqrstu';
const ADMIN = 'admin-token-0123456789abcdef';
const LIMIT = 3;

let up: CountingUpstream;
const config = (store: Record<string, unknown>, policy: Record<string, unknown> = {}) => ({
  upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
  auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }, { id: 'bob', hash: hashKey(BOB), scopes: [] }, { id: 'carol', hash: hashKey(CAROL), scopes: [] }] },
  store,
  admin: { enabled: true, port: 0, token: ADMIN },
  approvals: { maxPendingPerCaller: LIMIT },
  policy: { approvals: [{ id: 'records', tools: ['up/record'] }], ...policy },
});

before(async () => {
  up = await startCountingUpstream('modern');
});
after(async () => {
  await up?.close();
});

const call = (gw: TestGateway, token: string, item: string) => callTool(gw.url, token, 'record', { item });
const arrived = (item: string) => up.received.filter((b) => b.includes(JSON.stringify(item))).length;

const adminApi = (gw: TestGateway, method: 'GET' | 'POST', path: string, body?: unknown) => adminRequest(gw.gateway.adminUrl!, method, path, { bearer: ADMIN, body });
const decide = (gw: TestGateway, id: string, verdict: 'approve' | 'reject') => adminApi(gw, 'POST', `/approvals/${id}/${verdict}`, {});
async function pendingOf(gw: TestGateway, subject: string): Promise<Array<Record<string, any>>> {
  const listed = await adminApi(gw, 'GET', '/approvals?state=pending');
  assert.equal(listed.status, 200);
  return (listed.json.approvals as Array<Record<string, any>>).filter((a) => a.caller.subject === subject);
}

function assertLimited(r: ToolResult): void {
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.equal(codeOf(r), 'approval_limit_reached', JSON.stringify(r));
  const error = r.structuredContent!.error!;
  assert.equal(error.limit, LIMIT);
  assert.equal(error.rule, 'records');
  assert.match(error.message, new RegExp(`${LIMIT} approvals pending`));
  assert.match(error.message, /must be decided by a reviewer, or expire/);
  assert.match(error.message, /approvals\.maxPendingPerCaller/);
  assert.equal(approvalIdOf(r), undefined, 'no approval was opened');
}

describe('one replica (SQLite)', () => {
  let gw: TestGateway;
  const store = { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-approvals-limit-')), 'gatehouse.db') };
  before(async () => {
    gw = await startGateway(config(store));
  });
  after(async () => {
    await gw?.close();
  });

  test(`${LIMIT} pending approvals are allowed, the next is refused with approval_limit_reached; a repeat of a pending call is not`, async () => {
    const ids: string[] = [];
    for (let i = 1; i <= LIMIT; i++) {
      const r = await call(gw, ALICE, `a-${i}`);
      assert.equal(codeOf(r), 'approval_pending', JSON.stringify(r));
      ids.push(approvalIdOf(r));
    }
    assert.equal(new Set(ids).size, LIMIT);
    assertLimited(await call(gw, ALICE, 'a-over'));
    assert.equal((await pendingOf(gw, 'key:alice')).length, LIMIT, 'the refused call opened no approval');
    assert.equal(arrived('a-over'), 0, 'nothing was forwarded');
    // Calling again with the arguments of a pending approval finds it: it is not one more.
    for (let i = 1; i <= LIMIT; i++) {
      const again = await call(gw, ALICE, `a-${i}`);
      assert.equal(codeOf(again), 'approval_pending', JSON.stringify(again));
      assert.equal(approvalIdOf(again), ids[i - 1]);
    }
    // The bound is per caller: another caller still opens approvals.
    assert.equal(codeOf(await call(gw, BOB, 'b-1')), 'approval_pending');

    // Once one is decided, one more may be asked for (and no more than that).
    assert.equal((await decide(gw, ids[0]!, 'reject')).status, 200);
    const now = await call(gw, ALICE, 'a-over');
    assert.equal(codeOf(now), 'approval_pending', JSON.stringify(now));
    assertLimited(await call(gw, ALICE, 'a-over-2'));
    // An approved call no longer waits for a decision: it does not count either.
    assert.equal((await decide(gw, ids[1]!, 'approve')).status, 200);
    assert.equal(codeOf(await call(gw, ALICE, 'a-over-2')), 'approval_pending');
    assert.equal(codeOf(await call(gw, ALICE, 'a-2')), 'ran', 'the approved call still runs');
    assertLimited(await call(gw, ALICE, 'a-over-3'));
  });

  test('concurrent calls of one caller do not slip past the bound on one replica', async () => {
    const r = await Promise.all(Array.from({ length: 8 }, (_, i) => call(gw, BOB, `burst-${i}`)));
    const opened = r.filter((x) => codeOf(x) === 'approval_pending').length;
    // Bob already has one pending (b-1).
    assert.equal(opened, LIMIT - 1, JSON.stringify(r.map(codeOf)));
    assert.equal(r.filter((x) => codeOf(x) === 'approval_limit_reached').length, 8 - (LIMIT - 1));
    assert.equal((await pendingOf(gw, 'key:bob')).length, LIMIT);
  });

  test('identical calls racing for the last place all get the one approval they open', async () => {
    for (let i = 1; i < LIMIT; i++) assert.equal(codeOf(await call(gw, CAROL, `c-${i}`)), 'approval_pending');
    const racing = await Promise.all(Array.from({ length: 6 }, () => call(gw, CAROL, 'c-last')));
    assert.deepEqual([...new Set(racing.map(codeOf))], ['approval_pending'], JSON.stringify(racing.map(codeOf)));
    assert.equal(new Set(racing.map(approvalIdOf)).size, 1);
    assertLimited(await call(gw, CAROL, 'c-next'));
  });

  test('approvals a policy change left undecidable do not count', async () => {
    assertLimited(await call(gw, BOB, 'after-change'));
    const changed = validateConfigObject({ ...config(store, { budgets: [{ id: 'roomy', per: 'subject', window: 'day', limit: 1000 }] }), listen: { host: '127.0.0.1', port: 0 }, idempotency: { requireKeys: false } }, 'test');
    assert.deepEqual(await gw.gateway.reload(changed), []);
    assert.equal(codeOf(await call(gw, BOB, 'after-change')), 'approval_pending');
  });
});

describe('two replicas on one Redis', () => {
  let redis: TestRedis;
  let a: TestGateway;
  let b: TestGateway;
  before(async () => {
    redis = await startRedis();
    const store = { kind: 'redis', url: redis.url, keyPrefix: 'approvals-limit:' };
    a = await startGateway(config(store));
    b = await startGateway(config(store));
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await redis?.stop();
  });

  test('the bound counts what the caller has pending on every replica', async () => {
    assert.equal(codeOf(await call(a, ALICE, 'r-1')), 'approval_pending');
    assert.equal(codeOf(await call(b, ALICE, 'r-2')), 'approval_pending');
    const third = await call(a, ALICE, 'r-3');
    assert.equal(codeOf(third), 'approval_pending');
    assertLimited(await call(b, ALICE, 'r-4'));
    assertLimited(await call(a, ALICE, 'r-4'));
    // A repeat on the other replica finds the pending approval.
    assert.equal(approvalIdOf(await call(b, ALICE, 'r-3')), approvalIdOf(third));
    // Decided through A's admin API: B lets one more be opened.
    assert.equal((await decide(a, approvalIdOf(third), 'reject')).status, 200);
    assert.equal(codeOf(await call(b, ALICE, 'r-4')), 'approval_pending');
    assertLimited(await call(a, ALICE, 'r-5'));
  });
});
