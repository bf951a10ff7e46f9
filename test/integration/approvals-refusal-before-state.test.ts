// Who may decide an approval is judged before its state (DESIGN.md §7, the admin contract): a reviewer who
// may not decide it (not among its rule's reviewers: 404 not_found, as an id that does not exist, since 5
// December, 403 forbidden before; approving their own call: 403 self_approval) gets the same answer on an approved, rejected, used, expired or invalidated approval as on
// a pending one, and each attempt is an audit record `refused`. Until 5 December the state was judged
// first, so such a reviewer was answered 409 (`not_pending`, `expired`, `invalidated`) and learnt the state
// of an approval they may not decide (one of a rule they are not even shown), and no refusal was recorded.
// Whoever may decide it (a reviewer of the rule, the admin token) is still told its state. Real parts: an
// authorization server on loopback minting the tokens, the running gateway, the admin API over HTTP (bearer
// and inbox session), the built CLI, real SQLite.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { validateConfigObject } from '../../src/config/load.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { runCli } from '../helpers/cli.js';
import { adminRequest } from '../helpers/http.js';
import { inboxCookie } from '../helpers/inbox-session.js';
import { startReviewerGateway, type ReviewerGateway } from '../helpers/reviewer-gateway.js';
import { approvalIdOf, callTool } from '../helpers/tool-call.js';

const ADMIN = 'admin-token-0123456789abcdef';
const ADMIN_CONFIG = { enabled: true, port: 0, token: ADMIN, groups: ['sre', 'approvers'] };
const RULES = [
  { id: 'sre-only', tools: ['up/record'], arguments: { item: 'sre-*' }, reviewers: { groups: ['sre'] } },
  { id: 'sre-brief', tools: ['up/record'], arguments: { item: 'brief-*' }, reviewers: { groups: ['sre'] }, deadlineSeconds: 1 },
];
let reviewers: ReviewerGateway;
let storePath: string;

before(async () => {
  storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-refusal-first-')), 'gatehouse.db');
  reviewers = await startReviewerGateway({ store: { kind: 'sqlite', path: storePath }, admin: ADMIN_CONFIG, policy: { approvals: RULES } });
});
after(() => reviewers?.close());

const adminUrl = () => reviewers.gw.gateway.adminUrl!;
/** carol (sre) is the caller of every approval here; bob (approvers) reviews none of them; dave (sre) may decide them. */
const carol = () => reviewers.tokenFor('carol', ['sre']);
const bob = () => reviewers.tokenFor('bob', ['approvers']);
const dave = () => reviewers.tokenFor('dave', ['sre']);

async function heldCall(item: string): Promise<string> {
  const held = await callTool(reviewers.gw.url, await carol(), 'record', { item });
  assert.equal(held.structuredContent?.error?.code, 'approval_pending', JSON.stringify(held));
  return approvalIdOf(held);
}

const decide = (id: string, verdict: 'approve' | 'reject', bearer: string) => adminRequest(adminUrl(), 'POST', `/approvals/${id}/${verdict}`, { bearer, body: {} });
const stateOf = async (id: string): Promise<string> => (await adminRequest(adminUrl(), 'GET', `/approvals/${id}`, { bearer: ADMIN })).json.approval.state as string;

/** The refused records of one approval, as the audit holds them (read from the gateway's SQLite file). */
async function refusalsOf(id: string): Promise<string[]> {
  const store = new SqliteStore(storePath);
  try {
    return (await store.readAudit({ limit: 100_000 })).filter((r) => r.approvalId === id && r.outcome === 'refused').map((r) => `${r.reviewer} ${r.refusal}`);
  } finally {
    await store.close();
  }
}

/** What each refused attempt is answered on a pending approval: the answers every other state must give too. */
let refusedWhilePending: { forbidden: unknown; selfApproval: unknown };

/**
 * The refused reviewers' attempts on `id` (bob approving and rejecting, carol approving her own call): each
 * answered exactly as on a pending approval, and each recorded.
 */
async function assertRefusedAsIfPending(id: string, what: string): Promise<void> {
  const before = (await refusalsOf(id)).length;
  for (const verdict of ['approve', 'reject'] as const) {
    const r = await decide(id, verdict, await bob());
    assert.equal(r.status, 404, `${what}: bob ${verdict}: ${r.text}`);
    assert.deepEqual(r.json, refusedWhilePending.forbidden, `${what}: bob ${verdict}`);
  }
  const own = await decide(id, 'approve', await carol());
  assert.equal(own.status, 403, `${what}: carol approve: ${own.text}`);
  assert.deepEqual(own.json, refusedWhilePending.selfApproval, `${what}: carol approve`);
  assert.deepEqual((await refusalsOf(id)).slice(before), ['bob forbidden', 'bob forbidden', 'carol self_approval'], `${what}: each refusal recorded`);
}

test('on a pending approval: bob is refused 404 not_found (as an id that does not exist), carol\'s own approve 403 self_approval', async () => {
  const id = await heldCall('sre-pending');
  const forbidden = await decide(id, 'approve', await bob());
  assert.equal(forbidden.status, 404, forbidden.text);
  assert.equal(forbidden.json.error.code, 'not_found');
  const own = await decide(id, 'approve', await carol());
  assert.equal(own.status, 403, own.text);
  assert.equal(own.json.error.code, 'self_approval');
  refusedWhilePending = { forbidden: forbidden.json, selfApproval: own.json };
  assert.equal(await stateOf(id), 'pending');
});

for (const decided of ['approved', 'rejected'] as const) {
  test(`on ${decided === 'approved' ? 'an' : 'a'} ${decided} approval: refused as if pending, before and after a reviewer of the rule is told it is ${decided}`, async () => {
    const id = await heldCall(`sre-${decided}`);
    assert.equal((await decide(id, decided === 'approved' ? 'approve' : 'reject', ADMIN)).status, 200);
    await assertRefusedAsIfPending(id, decided);
    // Who may decide it is told how it stands: the admin token (break-glass) and dave, a reviewer of its rule.
    for (const bearer of [ADMIN, await dave()]) {
      const told = await decide(id, 'approve', bearer);
      assert.equal(told.status, 409, told.text);
      assert.equal(told.json.error.code, 'not_pending');
      assert.equal(told.json.error.state, decided);
    }
    await assertRefusedAsIfPending(id, `${decided}, asked again`);
  });
}

test('on a used approval (its approved run taken): refused as if pending; the admin token is told it is used', async () => {
  const id = await heldCall('sre-used');
  assert.equal((await decide(id, 'approve', ADMIN)).status, 200);
  assert.equal((await callTool(reviewers.gw.url, await carol(), 'record', { item: 'sre-used' })).isError, undefined, 'the approved call runs');
  // The next identical call finds the run taken: the approval is used up, and a new one is opened.
  assert.notEqual(await heldCall('sre-used'), id);
  assert.equal(await stateOf(id), 'used');
  await assertRefusedAsIfPending(id, 'used');
  const told = await decide(id, 'reject', ADMIN);
  assert.equal(told.status, 409, told.text);
  assert.equal(told.json.error.state, 'used');
});

test('on an expired approval: refused as if pending; the admin token is told it expired', async () => {
  const id = await heldCall('brief-expired');
  // Its deadline is one second: read until it has passed, a bounded number of times.
  for (let i = 0; i < 50 && (await stateOf(id)) !== 'expired'; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(await stateOf(id), 'expired');
  await assertRefusedAsIfPending(id, 'expired');
  const told = await decide(id, 'approve', ADMIN);
  assert.equal(told.status, 409, told.text);
  assert.equal(told.json.error.code, 'expired');
});

test('through the CLI and an inbox session: a decided approval is refused for who asks, not said to be decided', async () => {
  const id = await heldCall('sre-cli');
  assert.equal((await decide(id, 'reject', ADMIN)).status, 200);
  const env = { ...process.env, GATEHOUSE_ADMIN_URL: adminUrl() };
  const outsider = await runCli(['approvals', 'approve', id], { env: { ...env, GATEHOUSE_ADMIN_TOKEN: await bob() } });
  assert.equal(outsider.code, 3, outsider.stdout);
  assert.match(outsider.stderr, /No approval has this id.*\(not_found\)/);
  assert.doesNotMatch(outsider.stderr, /rejected|already/);
  const own = await runCli(['approvals', 'approve', id], { env: { ...env, GATEHOUSE_ADMIN_TOKEN: await carol() } });
  assert.equal(own.code, 1, own.stdout);
  assert.match(own.stderr, /you requested this call.*\(self_approval\)/i);
  const admin = await runCli(['approvals', 'approve', id], { env: { ...env, GATEHOUSE_ADMIN_TOKEN: ADMIN } });
  assert.equal(admin.code, 1, admin.stdout);
  assert.match(admin.stderr, /already rejected by admin-token \(not_pending\)/);

  // The inbox page's buttons post with the session cookie and its CSRF token: the same route, the same answer.
  const cookie = await inboxCookie(adminUrl(), await bob());
  const page = await request(`${adminUrl()}/`, { headers: { cookie } });
  const csrf = /meta name="csrf-token" content="([^"]+)"/.exec(await page.body.text())?.[1];
  assert.ok(csrf, 'signed in');
  const button = await request(`${adminUrl()}/approvals/${id}/approve`, { method: 'POST', headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/json' }, body: '{}' });
  assert.equal(button.statusCode, 404);
  assert.deepEqual(await button.body.json(), refusedWhilePending.forbidden);
});

test('on an approval a policy change invalidated: refused as if pending; the admin token is told it is invalidated', async () => {
  const id = await heldCall('sre-invalidated');
  const port = Number(new URL(reviewers.publicUrl).port);
  const changed = validateConfigObject({
    listen: { host: '127.0.0.1', port, publicUrl: reviewers.publicUrl },
    upstreams: [{ name: 'up', url: reviewers.up.url, era: 'modern' }],
    store: { kind: 'sqlite', path: storePath },
    idempotency: { requireKeys: false },
    auth: { oauth: { issuer: reviewers.as.issuer, audience: reviewers.publicUrl, groupsClaim: 'groups' } },
    admin: ADMIN_CONFIG,
    policy: { approvals: [...RULES, { id: 'added', tools: ['up/lookup'] }] },
  }, 'test');
  assert.deepEqual(await reviewers.gw.gateway.reload(changed), []);
  assert.equal((await adminRequest(adminUrl(), 'GET', `/approvals/${id}`, { bearer: ADMIN })).json.approval.invalidated, true);
  await assertRefusedAsIfPending(id, 'invalidated');
  const told = await decide(id, 'approve', ADMIN);
  assert.equal(told.status, 409, told.text);
  assert.equal(told.json.error.code, 'invalidated');
});
