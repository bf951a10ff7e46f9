// Four eyes (DESIGN.md §7, the admin contract; MCP tools: "clients SHOULD prompt for user confirmation on
// sensitive operations … and audit-log" [TOOLS §Security Considerations]): a human approval means someone
// other than the caller looked. A caller who is also a reviewer (an admin-group member by OAuth, or a
// subject a rule's `reviewers` names, or anyone on a rule that names no one) cannot approve their own call,
// through the admin API or the CLI; they may still reject it (withdrawing it runs nothing). The admin token,
// the break-glass operator, has no subject and may always decide. Every decision refused for who asked
// (self-approval, not a reviewer of the rule) leaves an audit record. Real parts: an authorization server on
// loopback minting the tokens, the running gateway, the admin API over HTTP, the built CLI, real SQLite.
// Until 4 December the caller's own approve went through (200) and the call ran on its second try.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { verifyChain } from '../../src/store/audit-chain.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { runCli } from '../helpers/cli.js';
import type { CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startReviewerGateway, type ReviewerGateway } from '../helpers/reviewer-gateway.js';
import { approvalIdOf, callTool } from '../helpers/tool-call.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
const ADMIN = 'admin-token-0123456789abcdef';
let reviewers: ReviewerGateway;
let up: CountingUpstream;
let gw: TestGateway;
let storePath: string;

before(async () => {
  storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-self-approval-')), 'gatehouse.db');
  reviewers = await startReviewerGateway({
    store: { kind: 'sqlite', path: storePath },
    apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }],
    admin: { enabled: true, port: 0, token: ADMIN, groups: ['sre', 'approvers'] },
    policy: {
      approvals: [
        { id: 'sre-only', tools: ['up/record'], arguments: { item: 'sre-*' }, reviewers: { groups: ['sre'] } },
        { id: 'named', tools: ['up/record'], arguments: { item: 'named-*' }, reviewers: { subjects: ['carol', 'dave'] } },
        { id: 'anyone', tools: ['up/record'] },
        { id: 'confirm', tools: ['up/record_fails'], by: 'user' },
      ],
    },
  });
  ({ up, gw } = reviewers);
});
after(() => reviewers?.close());

const tokenFor = (sub: string, groups: string[]) => reviewers.tokenFor(sub, groups);

/** A tools/call on the MCP endpoint with this bearer (an OAuth access token or an API key). */
const call = (bearer: string, item: string, name = 'record') => callTool(gw.url, bearer, name, { item });
const executed = (item: string) => up.executions.filter((e) => e.item === item).length;

async function decide(id: string, verdict: 'approve' | 'reject', bearer: string, body: Record<string, unknown> = {}) {
  const res = await request(`${gw.gateway.adminUrl}/approvals/${id}/${verdict}`, { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.statusCode, json: (await res.body.json()) as Record<string, any> };
}

/** The approval records of one approval, as the audit holds them (read from the gateway's SQLite file). */
async function auditOf(id: string) {
  const store = new SqliteStore(storePath);
  try {
    const all = await store.readAudit({ limit: 100_000 });
    assert.equal(verifyChain(all, await store.auditAnchor()).ok, true, 'the audit chain holds');
    return all.filter((r) => r.approvalId === id && r.method === 'approval');
  } finally {
    await store.close();
  }
}

test('a reviewer of the rule cannot approve their own call (403 self_approval), and the call stays held; another reviewer can', async () => {
  const carol = await tokenFor('carol', ['sre']);
  const first = await call(carol, 'sre-1');
  assert.equal(first.structuredContent?.error?.code, 'approval_pending', JSON.stringify(first));
  const id = approvalIdOf(first);

  const own = await decide(id, 'approve', carol, { reason: 'looks fine to me' });
  assert.equal(own.status, 403, JSON.stringify(own.json));
  assert.equal(own.json.error.code, 'self_approval');
  assert.match(own.json.error.message, /you requested this call/i);
  assert.match(own.json.error.message, /another reviewer/i);
  // Still held: the identical call is pending, nothing reached the upstream.
  assert.equal((await call(carol, 'sre-1')).structuredContent?.error?.code, 'approval_pending');
  assert.equal(executed('sre-1'), 0);

  // The refused attempt is on the record, naming who tried and why it was refused; no decision is.
  const records = await auditOf(id);
  const refused = records.filter((r) => r.outcome === 'refused');
  assert.equal(refused.length, 1, JSON.stringify(records));
  assert.equal(refused[0]!.refusal, 'self_approval');
  assert.equal(refused[0]!.reviewer, 'carol');
  assert.equal(refused[0]!.subject, 'carol');
  assert.equal(records.some((r) => r.outcome === 'approved'), false);

  const other = await decide(id, 'approve', await tokenFor('dave', ['sre']));
  assert.equal(other.status, 200, JSON.stringify(other.json));
  assert.equal(other.json.approval.decision.by, 'dave');
  assert.equal((await call(carol, 'sre-1')).isError, undefined);
  assert.equal(executed('sre-1'), 1);
});

test('being named in the rule\'s reviewers, or the rule naming no one, does not let a caller approve their own call', async () => {
  const carol = await tokenFor('carol', ['approvers']);
  const named = approvalIdOf(await call(carol, 'named-1'));
  const openRule = approvalIdOf(await call(carol, 'anyone-1'));
  for (const id of [named, openRule]) {
    const own = await decide(id, 'approve', carol);
    assert.equal(own.status, 403, JSON.stringify(own.json));
    assert.equal(own.json.error.code, 'self_approval');
    // Who may approve is judged before the body: with a malformed one too it is self_approval (until 5
    // December, 400 about the body); her reject, which she may send, is told what is wrong with its body.
    const malformed = await decide(id, 'approve', carol, { previewSha256: 'not-a-digest' });
    assert.equal(malformed.status, 403, JSON.stringify(malformed.json));
    assert.equal(malformed.json.error.code, 'self_approval');
    const rejectMalformed = await decide(id, 'reject', carol, { previewSha256: 'not-a-digest' });
    assert.equal(rejectMalformed.status, 400, JSON.stringify(rejectMalformed.json));
    assert.equal(rejectMalformed.json.error.code, 'bad_request');
  }
  // Another reviewer the rule admits may: dave is named, bob is in an admin group and the rule names no one.
  assert.equal((await decide(named, 'approve', await tokenFor('dave', ['approvers']))).status, 200);
  assert.equal((await decide(openRule, 'approve', await tokenFor('bob', ['approvers']))).status, 200);
});

test('a by: user rule fallen back to reviewers (the client cannot elicit) is no exception: the caller cannot approve it in the admin API', async () => {
  // The admin API takes the same access tokens as the MCP endpoint: an agent holding its user's token
  // and reaching the admin port would otherwise approve its own call, which is what the fallback to a
  // reviewer is there to prevent. The user's own confirmation is the elicitation, in their client.
  const carol = await tokenFor('carol', ['sre']);
  const pending = await call(carol, 'confirm-1', 'record_fails');
  assert.equal(pending.structuredContent?.error?.code, 'approval_pending', JSON.stringify(pending));
  const own = await decide(approvalIdOf(pending), 'approve', carol);
  assert.equal(own.status, 403, JSON.stringify(own.json));
  assert.equal(own.json.error.code, 'self_approval');
  assert.equal(up.executions.filter((e) => e.item === 'confirm-1').length, 0);
});

test('a caller may reject (withdraw) their own call: the decision names them and the call is answered approval_rejected', async () => {
  const carol = await tokenFor('carol', ['sre']);
  const id = approvalIdOf(await call(carol, 'sre-withdrawn'));
  const withdrawn = await decide(id, 'reject', carol, { reason: 'sent by mistake' });
  assert.equal(withdrawn.status, 200, JSON.stringify(withdrawn.json));
  assert.equal(withdrawn.json.approval.decision.by, 'carol');
  const answer = await call(carol, 'sre-withdrawn');
  assert.equal(answer.structuredContent?.error?.code, 'approval_rejected');
  assert.equal(executed('sre-withdrawn'), 0);
});

test('the admin token (break-glass, no subject) may approve any call, a reviewer\'s own included', async () => {
  const carol = await tokenFor('carol', ['sre']);
  const id = approvalIdOf(await call(carol, 'sre-break-glass'));
  const decided = await decide(id, 'approve', ADMIN);
  assert.equal(decided.status, 200, JSON.stringify(decided.json));
  assert.equal(decided.json.approval.decision.by, 'admin-token');
  assert.equal((await call(carol, 'sre-break-glass')).isError, undefined);
});

test('a decision refused because the reviewer is not among the rule\'s reviewers is audited too', async () => {
  const id = approvalIdOf(await call(ALICE, 'sre-not-yours'));
  const refused = await decide(id, 'approve', await tokenFor('bob', ['approvers']));
  // Answered as an id that does not exist (admin/server.ts notFoundToOutsiders), recorded as what it was.
  assert.equal(refused.status, 404);
  assert.equal(refused.json.error.code, 'not_found');
  const records = (await auditOf(id)).filter((r) => r.outcome === 'refused');
  assert.equal(records.length, 1);
  assert.equal(records[0]!.refusal, 'forbidden');
  assert.equal(records[0]!.reviewer, 'bob');
  assert.equal(records[0]!.subject, 'key:alice');
});

test('gatehouse approvals approve with the caller\'s own access token is refused (exit 1, the reason), reject is not', async () => {
  const carol = await tokenFor('carol', ['sre']);
  const id = approvalIdOf(await call(carol, 'sre-cli'));
  const env = { ...process.env, GATEHOUSE_ADMIN_URL: gw.gateway.adminUrl!, GATEHOUSE_ADMIN_TOKEN: carol };
  const approve = await runCli(['approvals', 'approve', id, '--reason', 'mine'], { env });
  assert.equal(approve.code, 1, approve.stdout);
  assert.match(approve.stderr, /you requested this call.*\(self_approval\)/i);
  assert.equal((await call(carol, 'sre-cli')).structuredContent?.error?.code, 'approval_pending');
  const reject = await runCli(['approvals', 'reject', id, '--reason', 'withdrawn', '--json'], { env });
  assert.equal(reject.code, 0, reject.stderr);
  assert.equal(JSON.parse(reject.stdout).state, 'rejected');
  assert.equal(executed('sre-cli'), 0);
});
