// Approvals on a shared Redis (issue 14, "Shown by": two replicas on one Redis: an approval made through
// replica A lets the call run on replica B). Two gateways in this process, each with its own Redis
// connection and its own admin listener, share one Redis and one counting upstream. The approval an agent's
// call opens on one replica is the approval the same call finds on the other; a decision made through
// either replica's admin API holds on both; concurrent identical calls spread over both run once.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hashKey } from '../../src/auth/key-hash.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { adminRequest } from '../helpers/http.js';
import { approvalIdOf, callTool, codeOf } from '../helpers/tool-call.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
const ADMIN = 'admin-token-0123456789abcdef';
const APPROVALS = [{ id: 'records', tools: ['up/record*'] }];

let redis: TestRedis;
let up: CountingUpstream;
let a: TestGateway;
let b: TestGateway;

const config = () => ({
  upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
  auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }] },
  store: { kind: 'redis', url: redis.url, keyPrefix: 'approvals-redis:' },
  admin: { enabled: true, port: 0, token: ADMIN },
  policy: { approvals: APPROVALS },
});

before(async () => {
  redis = await startRedis();
  up = await startCountingUpstream('modern');
  a = await startGateway(config());
  b = await startGateway(config());
  assert.notEqual(a.gateway.adminUrl, b.gateway.adminUrl);
});
after(async () => {
  await a?.close();
  await b?.close();
  await up?.close();
  await redis?.stop();
});

const call = (gw: TestGateway, name: string, args: Record<string, unknown>) => callTool(gw.url, ALICE, name, args);
const executed = (item: string) => up.executions.filter((e) => e.item === item).length;
const arrived = (item: string) => up.received.filter((body) => body.includes(JSON.stringify(item))).length;

const adminApi = (gw: TestGateway, method: 'GET' | 'POST', path: string, body?: unknown) => adminRequest(gw.gateway.adminUrl!, method, path, { bearer: ADMIN, body });
const decide = (gw: TestGateway, id: string, verdict: 'approve' | 'reject', reason?: string) => adminApi(gw, 'POST', `/approvals/${id}/${verdict}`, reason ? { reason } : {});

describe('two replicas on one Redis', () => {
  test('the approval a call opens on B is the one the same call finds on A', async () => {
    const onB = await call(b, 'record', { item: 'shared-1' });
    assert.equal(codeOf(onB), 'approval_pending');
    const id = approvalIdOf(onB);
    assert.match(id, /^ap_[0-9a-f]{24}$/);
    const onA = await call(a, 'record', { item: 'shared-1' });
    assert.equal(codeOf(onA), 'approval_pending');
    assert.equal(approvalIdOf(onA), id);
    // Either admin API shows it.
    for (const gw of [a, b]) {
      const shown = await adminApi(gw, 'GET', `/approvals/${id}`);
      assert.equal(shown.status, 200);
      assert.equal(shown.json.approval.state, 'pending');
      assert.equal(shown.json.approval.invalidated, false);
    }
    assert.equal(arrived('shared-1'), 0);
  });

  test('an approval made through A lets the call run on B, once; the next identical call on A is pending anew', async () => {
    const id = approvalIdOf(await call(b, 'record', { item: 'approved-on-a' }));
    const decided = await decide(a, id, 'approve', 'fine');
    assert.equal(decided.status, 200, JSON.stringify(decided.json));
    assert.equal(decided.json.approval.state, 'approved');
    const ran = await call(b, 'record', { item: 'approved-on-a' });
    assert.equal(codeOf(ran), 'ran', JSON.stringify(ran));
    assert.match(ran.content[0]!.text, /^recorded approved-on-a/);
    assert.equal(executed('approved-on-a'), 1);
    const again = await call(a, 'record', { item: 'approved-on-a' });
    assert.equal(codeOf(again), 'approval_pending');
    assert.notEqual(approvalIdOf(again), id);
    assert.equal(executed('approved-on-a'), 1);
    assert.equal((await adminApi(b, 'GET', `/approvals/${id}`)).json.approval.state, 'used');
    // Deciding it again through B is refused: it was decided through A.
    assert.equal((await decide(b, id, 'approve')).status, 409);
  });

  test('concurrent identical calls spread over both replicas run once', async () => {
    const args = { item: 'race-across', ms: 200 };
    const id = approvalIdOf(await call(a, 'record_slowly', args));
    assert.equal((await decide(b, id, 'approve')).status, 200);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => call(i % 2 ? a : b, 'record_slowly', args)));
    const codes = results.map(codeOf);
    assert.equal(codes.filter((c) => c === 'ran').length, 1, codes.join(' '));
    assert.equal(codes.filter((c) => c === 'approval_pending').length, 7, codes.join(' '));
    assert.equal(executed('race-across'), 1);
    // Those that did not run were told the approved run was under way, on the same approval, whichever
    // replica they reached (that run might yet have been given back); once it ran, the next call asks anew.
    const pendingIds = new Set(results.filter((r) => codeOf(r) === 'approval_pending').map(approvalIdOf));
    assert.deepEqual([...pendingIds], [id]);
    const next = await call(b, 'record_slowly', args);
    assert.equal(codeOf(next), 'approval_pending');
    assert.notEqual(approvalIdOf(next), id);
  });

  test('concurrent decisions through both admin APIs: exactly one is recorded', async () => {
    const id = approvalIdOf(await call(a, 'record', { item: 'decided-twice' }));
    const answers = await Promise.all([decide(a, id, 'approve'), decide(b, id, 'reject', 'no'), decide(a, id, 'reject', 'no'), decide(b, id, 'approve')]);
    const statuses = answers.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 409, 409, 409], JSON.stringify(answers.map((r) => r.json)));
    const winner = answers.find((r) => r.status === 200)!.json.approval.state as string;
    const next = await call(b, 'record', { item: 'decided-twice' });
    assert.equal(codeOf(next), winner === 'approved' ? 'ran' : 'approval_rejected');
    assert.equal(executed('decided-twice'), winner === 'approved' ? 1 : 0);
  });

  test('a rejection made through B is answered approval_rejected to a call made through A', async () => {
    const id = approvalIdOf(await call(a, 'record', { item: 'rejected-on-b' }));
    const r = await decide(b, id, 'reject', 'not today');
    assert.equal(r.status, 200);
    assert.equal(r.json.approval.state, 'rejected');
    const answer = await call(a, 'record', { item: 'rejected-on-b' });
    assert.equal(codeOf(answer), 'approval_rejected');
    assert.equal(approvalIdOf(answer), id);
    assert.equal(answer.structuredContent?.error?.reason, 'not today');
    // Said once: the next identical call, on either replica, asks anew.
    const anew = await call(b, 'record', { item: 'rejected-on-b' });
    assert.equal(codeOf(anew), 'approval_pending');
    assert.notEqual(approvalIdOf(anew), id);
    assert.equal(arrived('rejected-on-b'), 0);
  });

  test('listing through A shows the approvals opened through B', async () => {
    const ids = [];
    for (const item of ['listed-b-1', 'listed-b-2']) ids.push(approvalIdOf(await call(b, 'record', { item })));
    const list = await adminApi(a, 'GET', '/approvals?state=pending');
    assert.equal(list.status, 200);
    for (const id of ids) {
      const found = list.json.approvals.find((x: { id: string }) => x.id === id);
      assert.ok(found, `${id} is listed through A`);
      assert.equal(found.caller.subject, 'key:alice');
      assert.equal(found.toolRef, 'up/record');
      assert.equal(found.state, 'pending');
    }
    // The full list has the decided ones too, and no store-internal documents.
    const all = await adminApi(a, 'GET', '/approvals');
    assert.ok(all.json.approvals.every((x: { id: string }) => /^ap_[0-9a-f]{24}$/.test(x.id)));
    assert.ok(all.json.approvals.some((x: { state: string }) => x.state === 'used'));
    assert.ok(all.json.approvals.some((x: { state: string }) => x.state === 'rejected'));
  });
});
