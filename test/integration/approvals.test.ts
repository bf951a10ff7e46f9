// Human approval bound to the exact call (issue 14). A real upstream (v2 SDK server that counts what it
// executes) sits behind a gateway whose policy.approvals hold back its destructive tools. The agent's side
// is driven with plain modern requests and with the v1 SDK client; the reviewer's side through the admin
// API (on its own listener) and the CLI. Each invariant has its test: changed arguments are never
// forwarded; a policy change needs a new approval; expiry is a refusal the agent sees; concurrent identical
// retries run once. The audit holds proposed, approved/rejected/expired, executed and the call's record.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { validateConfigObject } from '../../src/config/load.js';
import { verifyChain } from '../../src/store/audit-chain.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { runCli } from '../helpers/cli.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { adminRequest, modernRequest, post } from '../helpers/http.js';
import { approvalIdOf, callTool, type ToolResult } from '../helpers/tool-call.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
const BOB = 'gh_bob_0123456789abcdefghijklmnopqrstuvwx';
const ADMIN = 'admin-token-0123456789abcdef';

const APPROVALS = [
  { id: 'twice', tools: ['up/record'], arguments: { item: 'twice-*' }, reuse: 2 },
  { id: 'secrets', tools: ['up/lookup'], arguments: { item: 'secret-*' }, deadlineSeconds: 1 },
  { id: 'destructive', annotations: { destructiveHint: true }, reviewers: { subjects: ['sre-lead'] } },
];

let up: CountingUpstream;
let gw: TestGateway;
let storePath: string;
let admin: string;
const rawConfig = (policy: Record<string, unknown> = {}) => ({
  upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
  auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }, { id: 'bob', hash: hashKey(BOB), scopes: [] }] },
  store: { kind: 'sqlite', path: storePath },
  metrics: { enabled: true, port: 0 },
  admin: { enabled: true, port: 0, token: ADMIN },
  policy: { approvals: APPROVALS, ...policy },
});

before(async () => {
  up = await startCountingUpstream('modern');
  storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-approvals-')), 'gatehouse.db');
  gw = await startGateway(rawConfig());
  admin = gw.gateway.adminUrl!;
});
after(async () => {
  await gw.close();
  await up.close();
});

const call = (token: string, name: string, args: Record<string, unknown>) => callTool(gw.url, token, name, args);
const executed = (item: string) => up.executions.filter((e) => e.item === item).length;
const arrived = (item: string) => up.received.filter((b) => b.includes(JSON.stringify(item))).length;

/** The admin API with the admin token, or `token` (an empty one sends no Authorization). */
const adminApi = (method: 'GET' | 'POST', path: string, body?: unknown, token = ADMIN) => adminRequest(admin, method, path, { bearer: token, body });
const approve = (id: string, reason?: string) => adminApi('POST', `/approvals/${id}/approve`, reason ? { reason } : {});

describe('the agent\'s side', () => {
  test('the first call runs nothing and says approval_pending with the approval id and run id; calling again finds the same approval', async () => {
    const first = await call(ALICE, 'record', { item: 'invoice-1' });
    assert.equal(first.isError, true);
    assert.equal(first.structuredContent?.error?.code, 'approval_pending');
    const id = approvalIdOf(first);
    assert.match(id, /^ap_[0-9a-f]{24}$/);
    assert.match(first._meta?.['dev.gatehouse/run_id'] as string, /^[0-9a-f-]{36}$/);
    assert.match(first.content[0]!.text, /call again later with exactly the same arguments/i);
    const again = await call(ALICE, 'record', { item: 'invoice-1' });
    assert.equal(again.structuredContent?.error?.code, 'approval_pending');
    assert.equal(approvalIdOf(again), id);
    assert.equal(arrived('invoice-1'), 0, 'nothing was forwarded');
    // Different arguments, or another caller with the same arguments, are another call: another approval.
    assert.notEqual(approvalIdOf(await call(ALICE, 'record', { item: 'invoice-2' })), id);
    assert.notEqual(approvalIdOf(await call(BOB, 'record', { item: 'invoice-1' })), id);
    // Tools no rule selects run at once.
    assert.equal((await call(ALICE, 'lookup', { item: 'plain' })).isError, undefined);
  });

  test('once approved, the identical call runs exactly once; the next identical call needs a new approval', async () => {
    const id = approvalIdOf(await call(ALICE, 'record', { item: 'order-7' }));
    const decided = await approve(id, 'looks right');
    assert.equal(decided.status, 200, JSON.stringify(decided.json));
    assert.equal(decided.json.approval.state, 'approved');
    assert.equal(decided.json.approval.decision.by, 'admin-token');
    const ran = await call(ALICE, 'record', { item: 'order-7' });
    assert.equal(ran.isError, undefined, JSON.stringify(ran));
    assert.match(ran.content[0]!.text, /recorded order-7/);
    assert.equal(executed('order-7'), 1);
    const next = await call(ALICE, 'record', { item: 'order-7' });
    assert.equal(next.structuredContent?.error?.code, 'approval_pending');
    assert.notEqual(approvalIdOf(next), id);
    assert.equal(executed('order-7'), 1);
    const shown = await adminApi('GET', `/approvals/${id}`);
    assert.equal(shown.json.approval.state, 'used');
  });

  test('reuse: 2 lets the approved call run twice, then asks again', async () => {
    const id = approvalIdOf(await call(ALICE, 'record', { item: 'twice-a' }));
    assert.equal((await approve(id)).status, 200);
    assert.equal((await call(ALICE, 'record', { item: 'twice-a' })).isError, undefined);
    assert.equal((await call(ALICE, 'record', { item: 'twice-a' })).isError, undefined);
    assert.equal((await call(ALICE, 'record', { item: 'twice-a' })).structuredContent?.error?.code, 'approval_pending');
    assert.equal(executed('twice-a'), 2);
  });

  test('invariant: changed arguments are refused and never forwarded', async () => {
    const id = approvalIdOf(await call(ALICE, 'record', { item: 'transfer-100' }));
    assert.equal((await approve(id)).status, 200);
    const changed = await call(ALICE, 'record', { item: 'transfer-100000' });
    assert.equal(changed.structuredContent?.error?.code, 'approval_pending');
    assert.notEqual(approvalIdOf(changed), id);
    assert.equal(arrived('transfer-100000'), 0);
    // The approved call itself is still there to run.
    assert.equal((await call(ALICE, 'record', { item: 'transfer-100' })).isError, undefined);
    assert.equal(executed('transfer-100'), 1);
    assert.equal(arrived('transfer-100000'), 0);
  });

  test('invariant: concurrent identical retries execute once', async () => {
    const id = approvalIdOf(await call(ALICE, 'record_slowly', { item: 'race-1', ms: 150 }));
    assert.equal((await approve(id)).status, 200);
    const results = await Promise.all(Array.from({ length: 8 }, () => call(ALICE, 'record_slowly', { item: 'race-1', ms: 150 })));
    const ran = results.filter((r) => r.isError === undefined);
    assert.equal(ran.length, 1, JSON.stringify(results.map((r) => r.structuredContent?.error?.code ?? 'ok')));
    for (const r of results.filter((r) => r.isError)) assert.equal(r.structuredContent?.error?.code, 'approval_pending');
    assert.equal(executed('race-1'), 1);
  });

  test('a rejection answers approval_rejected with the reason, once; calling again asks anew', async () => {
    const id = approvalIdOf(await call(ALICE, 'record', { item: 'drop-table' }));
    const r = await adminApi('POST', `/approvals/${id}/reject`, { reason: 'not during the freeze' });
    assert.equal(r.status, 200);
    const answer = await call(ALICE, 'record', { item: 'drop-table' });
    assert.equal(answer.structuredContent?.error?.code, 'approval_rejected');
    assert.equal(approvalIdOf(answer), id);
    assert.match(answer.content[0]!.text, /not during the freeze/);
    assert.equal(answer.structuredContent?.error?.reason, 'not during the freeze');
    const anew = await call(ALICE, 'record', { item: 'drop-table' });
    assert.equal(anew.structuredContent?.error?.code, 'approval_pending');
    assert.notEqual(approvalIdOf(anew), id);
    assert.equal(arrived('drop-table'), 0);
    // A decided approval cannot be decided again.
    assert.equal((await approve(id)).status, 409);
  });

  test('invariant: expiry is a refusal the agent sees (approval_expired), and it cannot be approved after', async () => {
    const first = await call(ALICE, 'lookup', { item: 'secret-plans' });
    const id = approvalIdOf(first);
    assert.equal(first.structuredContent?.error?.code, 'approval_pending');
    await new Promise((r) => setTimeout(r, 1_200));
    const late = await approve(id);
    assert.equal(late.status, 409);
    assert.equal(late.json.error.code, 'expired');
    const expired = await call(ALICE, 'lookup', { item: 'secret-plans' });
    assert.equal(expired.structuredContent?.error?.code, 'approval_expired');
    assert.equal(approvalIdOf(expired), id);
    assert.equal((await call(ALICE, 'lookup', { item: 'secret-plans' })).structuredContent?.error?.code, 'approval_pending');
    assert.equal(arrived('secret-plans'), 0);
  });

  test('a v1 SDK client (legacy era) receives approval_pending as a tool result', async () => {
    const legacyUp = await startCountingUpstream('legacy');
    const legacy = await startGateway({ ...rawConfig(), upstreams: [{ name: 'up', url: legacyUp.url }], store: undefined, metrics: { enabled: false }, admin: { enabled: true, port: 0, token: ADMIN } });
    try {
      const client = new V1Client({ name: 'approvals-v1', version: '1' });
      await client.connect(new V1Transport(new URL(legacy.url), { requestInit: { headers: { authorization: `Bearer ${ALICE}` } } }));
      const result = (await client.callTool({ name: 'record', arguments: { item: 'v1-item' } })) as ToolResult;
      assert.equal(result.isError, true);
      assert.equal(result.structuredContent?.error?.code, 'approval_pending');
      assert.match(approvalIdOf(result), /^ap_/);
      assert.equal(legacyUp.executions.length, 0);
      await client.close();
    } finally {
      await legacy.close();
      await legacyUp.close();
    }
  });
});

describe('the policy version', () => {
  test('invariant: a policy change invalidates pending approvals and the identical call needs a new one', async () => {
    const id = approvalIdOf(await call(ALICE, 'record', { item: 'policy-v1' }));
    const changed = validateConfigObject({ ...rawConfig({ budgets: [{ id: 'roomy', per: 'subject', window: 'day', limit: 1000 }] }), listen: { host: '127.0.0.1', port: 0 }, idempotency: { requireKeys: false } }, 'test');
    assert.deepEqual(await gw.gateway.reload(changed), []);
    const shown = await adminApi('GET', `/approvals/${id}`);
    assert.equal(shown.json.approval.invalidated, true);
    const refused = await approve(id);
    assert.equal(refused.status, 409);
    assert.equal(refused.json.error.code, 'invalidated');
    const anew = await call(ALICE, 'record', { item: 'policy-v1' });
    assert.equal(anew.structuredContent?.error?.code, 'approval_pending');
    assert.notEqual(approvalIdOf(anew), id);
    // An approval made before the change no longer lets the call run either.
    const before = approvalIdOf(anew);
    assert.equal((await approve(before)).status, 200);
    assert.equal((await call(ALICE, 'record', { item: 'policy-v1' })).isError, undefined);
    assert.equal(executed('policy-v1'), 1);
  });
});

describe('metrics after a reload', () => {
  test('approval rules added by a reload are counted in gatehouse_approvals_pending', async () => {
    const store = { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-approvals-reload-')), 'gatehouse.db') };
    const first = await startGateway({ ...rawConfig(), store, policy: {} });
    try {
      const scrape = async () => (await (await request(first.gateway.metricsUrl!)).body.text()).match(/^gatehouse_approvals_pending (\d+)/m)?.[1];
      assert.equal(await scrape(), '0');
      const withRules = validateConfigObject({ ...rawConfig(), store, listen: { host: '127.0.0.1', port: 0 }, idempotency: { requireKeys: false } }, 'test');
      assert.deepEqual(await first.gateway.reload(withRules), []);
      const req = modernRequest(1, 'tools/call', { name: 'record', arguments: { item: 'after-reload' } });
      const res = await post(first.url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}` });
      assert.equal((res.json().result as ToolResult).structuredContent?.error?.code, 'approval_pending');
      assert.equal(await scrape(), '1');
    } finally {
      await first.close();
    }
  });
});

describe('the reviewer\'s side', () => {
  test('the admin API needs its token; lists, shows and refuses what it cannot do with structured errors', async () => {
    assert.equal((await adminApi('GET', '/approvals', undefined, '')).status, 401);
    const wrong = await adminApi('GET', '/approvals', undefined, 'not-the-token-at-all');
    assert.equal(wrong.status, 401);
    assert.equal(wrong.json.error.code, 'unauthorized');
    const id = approvalIdOf(await call(BOB, 'record', { item: 'listed-1', password: 'hunter2-hunter2' }));
    const list = await adminApi('GET', '/approvals?state=pending');
    assert.equal(list.status, 200);
    const mine = list.json.approvals.find((a: { id: string }) => a.id === id);
    assert.ok(mine, 'the pending approval is listed');
    assert.equal(mine.caller.subject, 'key:bob');
    assert.equal(mine.toolRef, 'up/record');
    assert.equal(mine.preview.item, 'listed-1');
    assert.notEqual(mine.preview.password, 'hunter2-hunter2', 'secrets are redacted in the preview');
    assert.match(mine.previewSha256, /^[0-9a-f]{64}$/);
    assert.equal((await adminApi('GET', '/approvals/ap_000000000000000000000000')).status, 404);
    assert.equal((await adminApi('GET', '/approvals?state=bogus')).status, 400);
    // The reviewer proves what they saw: a decision on another preview is refused.
    const mismatch = await adminApi('POST', `/approvals/${id}/approve`, { previewSha256: '0'.repeat(64) });
    assert.equal(mismatch.status, 409);
    assert.equal(mismatch.json.error.code, 'preview_mismatch');
    const ok = await adminApi('POST', `/approvals/${id}/approve`, { previewSha256: mine.previewSha256 });
    assert.equal(ok.json.approval.decision.previewSha256, mine.previewSha256);
    // The admin API is not on the MCP port.
    const onMcp = await request(`${gw.origin}/approvals`, { headers: { authorization: `Bearer ${ADMIN}` } });
    assert.notEqual(onMcp.statusCode, 200);
    await onMcp.body.dump();
  });

  test('gatehouse approvals list, show, approve and reject talk to the admin API', async () => {
    const id = approvalIdOf(await call(ALICE, 'record', { item: 'cli-1' }));
    const env = { ...process.env, GATEHOUSE_ADMIN_URL: admin, GATEHOUSE_ADMIN_TOKEN: ADMIN };
    const list = await runCli(['approvals', 'list'], { env });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, new RegExp(`${id}\\s+pending\\s+up/record\\s+key:alice`));
    const show = await runCli(['approvals', 'show', id], { env });
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /"item": "cli-1"/);
    const approved = await runCli(['approvals', 'approve', id, '--reason', 'ok by me'], { env });
    assert.equal(approved.code, 0, approved.stderr);
    assert.match(approved.stdout, new RegExp(`${id} approved: ok by me`));
    assert.equal((await call(ALICE, 'record', { item: 'cli-1' })).isError, undefined);
    const other = approvalIdOf(await call(ALICE, 'record', { item: 'cli-2' }));
    const rejected = await runCli(['approvals', 'reject', other, '--reason', 'no', '--json'], { env });
    assert.equal(rejected.code, 0, rejected.stderr);
    assert.equal(JSON.parse(rejected.stdout).state, 'rejected');
    const missing = await runCli(['approvals', 'show', 'ap_000000000000000000000000'], { env });
    assert.equal(missing.code, 3);
    assert.match(missing.stderr, /No approval has this id/);
    const usage = await runCli(['approvals', 'approve'], { env });
    assert.equal(usage.code, 2);
  });

  test('every step is an audit record carrying the approval id; metrics count pending approvals and decisions', async () => {
    const id = approvalIdOf(await call(ALICE, 'record', { item: 'audited-1' }));
    await approve(id, 'fine');
    await call(ALICE, 'record', { item: 'audited-1' });
    const store = new SqliteStore(storePath);
    try {
      const records = (await store.readAudit({ limit: 100_000 })).filter((r) => r.approvalId === id);
      const steps = records.map((r) => (r.method === 'approval' ? r.outcome : `call:${r.outcome}`));
      // proposed (before the pending answer), the pending call's own record, the decision, the run, the call's record.
      assert.deepEqual(steps, ['proposed', 'call:refused', 'approved', 'executed', 'call:ok']);
      const decision = records.find((r) => r.outcome === 'approved')!;
      assert.equal(decision.reviewer, 'admin-token');
      assert.equal(decision.reason, 'fine');
      const all = await store.readAudit({ limit: 100_000 });
      assert.equal(verifyChain(all, await store.auditAnchor()).ok, true);
    } finally {
      await store.close();
    }
    const text = await (await request(gw.gateway.metricsUrl!)).body.text();
    assert.match(text, /gatehouse_approvals_pending \d+/);
    assert.match(text, /gatehouse_approval_decisions_total\{decision="approved"\} [1-9]/);
    assert.match(text, /gatehouse_approval_decisions_total\{decision="rejected"\} [1-9]/);
    assert.match(text, /gatehouse_approval_decisions_total\{decision="expired"\} [1-9]/);
  });
});
