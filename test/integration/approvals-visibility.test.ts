// What a reviewer is shown (DESIGN.md §7, the admin contract): only the approvals they may decide, those
// of rules whose `reviewers` name them (by subject or group) or name no one; the admin token is shown every
// one. An approval's preview is the call's arguments (redacted of credentials, not of business data: the
// refund, the mail, the customer), so a reviewer of one team's rule is not shown another team's calls.
// Until 4 December `GET /approvals`, `GET /approvals/{id}` and so `gatehouse approvals list|show` showed
// every approval, preview included, to any admin-group member, who got 403 only on deciding it.
// Real parts: an authorization server on loopback minting the tokens, the running gateway, the admin API
// over HTTP, the built CLI, real SQLite.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { hashKey } from '../../src/auth/key-hash.js';
import { runCli } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startReviewerGateway, type ReviewerGateway } from '../helpers/reviewer-gateway.js';
import { adminRequest, modernRequest, post } from '../helpers/http.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
const ADMIN = 'admin-token-0123456789abcdef';
let reviewers: ReviewerGateway;
let gw: TestGateway;
/** The approval of each rule, by rule id, opened by alice's calls. */
const ids: Record<'sre-only' | 'named' | 'anyone', string> = { 'sre-only': '', named: '', anyone: '' };
const ITEMS = { 'sre-only': 'sre-refund-4711-EUR', named: 'named-mail-to-ceo', anyone: 'anyone-note' } as const;

before(async () => {
  reviewers = await startReviewerGateway({
    apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }],
    admin: { enabled: true, port: 0, token: ADMIN, groups: ['sre', 'approvers'] },
    policy: {
      approvals: [
        { id: 'sre-only', tools: ['up/record'], arguments: { item: 'sre-*' }, reviewers: { groups: ['sre'] } },
        { id: 'named', tools: ['up/record'], arguments: { item: 'named-*' }, reviewers: { subjects: ['erin'] } },
        { id: 'anyone', tools: ['up/record'] },
      ],
    },
  });
  gw = reviewers.gw;
  let n = 0;
  for (const rule of Object.keys(ids) as Array<keyof typeof ids>) {
    const req = modernRequest(++n, 'tools/call', { name: 'record', arguments: { item: ITEMS[rule] } });
    const res = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}` });
    const result = res.json().result as { structuredContent?: { error?: { code: string } }; _meta?: Record<string, string> };
    assert.equal(result.structuredContent?.error?.code, 'approval_pending', res.text);
    ids[rule] = result._meta!['dev.gatehouse/approval_id']!;
  }
});
after(() => reviewers?.close());

const tokenFor = (sub: string, groups: string[]) => reviewers.tokenFor(sub, groups);

/** The admin API with a bearer; a POST (a decision) carries an empty JSON body. */
const admin = (method: 'GET' | 'POST', path: string, bearer: string) => adminRequest(gw.gateway.adminUrl!, method, path, { bearer, body: method === 'POST' ? {} : undefined });
/** The rules of the approvals listed to this bearer, sorted. */
async function listedRules(bearer: string, state = 'all'): Promise<string[]> {
  const r = await admin('GET', `/approvals?state=${state}`, bearer);
  assert.equal(r.status, 200, r.text);
  return (r.json.approvals as Array<{ rule: string }>).map((a) => a.rule).sort();
}

test('GET /approvals lists to a reviewer only the approvals of rules they review (or that name no one); the admin token sees all', async () => {
  assert.deepEqual(await listedRules(await tokenFor('bob', ['approvers'])), ['anyone']);
  assert.deepEqual(await listedRules(await tokenFor('carol', ['sre'])), ['anyone', 'sre-only']);
  assert.deepEqual(await listedRules(await tokenFor('erin', ['approvers'])), ['anyone', 'named']);
  assert.deepEqual(await listedRules(await tokenFor('erin', ['approvers']), 'pending'), ['anyone', 'named']);
  assert.deepEqual(await listedRules(ADMIN), ['anyone', 'named', 'sre-only']);
  // Nothing of the hidden calls is in the answer: not their arguments, not their ids.
  const bob = await admin('GET', '/approvals?state=all', await tokenFor('bob', ['approvers']));
  for (const hidden of ['sre-only', 'named'] as const) {
    assert.ok(!bob.text.includes(ITEMS[hidden]), `bob is shown ${hidden}'s arguments: ${bob.text}`);
    assert.ok(!bob.text.includes(ids[hidden]), `bob is shown ${hidden}'s id`);
  }
});

// An approval's id is derived from the call (the caller, the tool, the arguments, the policy version): a
// reviewer who works one out must not learn from the answer that the call was made. Until 5 December an
// approval of another rule was answered 403 forbidden, an id that does not exist 404.
test('GET /approvals/{id} of an approval a reviewer may not decide is answered as an id that does not exist: 404, without its preview', async () => {
  const bob = await tokenFor('bob', ['approvers']);
  const unknown = await admin('GET', '/approvals/ap_000000000000000000000000', bob);
  assert.equal(unknown.status, 404, unknown.text);
  for (const hidden of ['sre-only', 'named'] as const) {
    const r = await admin('GET', `/approvals/${ids[hidden]}`, bob);
    assert.equal(r.status, 404, r.text);
    assert.deepEqual(r.json, unknown.json);
    assert.ok(!r.text.includes(ITEMS[hidden]), r.text);
  }
  const shown = await admin('GET', `/approvals/${ids.anyone}`, bob);
  assert.equal(shown.status, 200, shown.text);
  assert.deepEqual(shown.json.approval.preview, { item: ITEMS.anyone });
  assert.equal((await admin('GET', `/approvals/${ids['sre-only']}`, await tokenFor('carol', ['sre']))).status, 200);
  assert.equal((await admin('GET', `/approvals/${ids['sre-only']}`, ADMIN)).status, 200);
  // An id that does not exist is still 404 (whoever asks).
  assert.equal((await admin('GET', '/approvals/ap_000000000000000000000000', bob)).status, 404);
});

test('gatehouse approvals list and show, run with a reviewer\'s access token, show only what that reviewer may decide', async () => {
  const env = { ...process.env, GATEHOUSE_ADMIN_URL: gw.gateway.adminUrl!, GATEHOUSE_ADMIN_TOKEN: await tokenFor('bob', ['approvers']) };
  const list = await runCli(['approvals', 'list', '--state', 'all'], { env });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, new RegExp(`${ids.anyone}\\s+pending\\s+up/record\\s+key:alice`));
  assert.ok(!list.stdout.includes(ids['sre-only']) && !list.stdout.includes(ids.named), list.stdout);
  const json = await runCli(['approvals', 'list', '--json'], { env });
  assert.equal(json.code, 0, json.stderr);
  const rows = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as { rule: string; preview: unknown });
  assert.deepEqual(rows.map((r) => r.rule), ['anyone']);
  const show = await runCli(['approvals', 'show', ids['sre-only']], { env });
  // The CLI's exit for an approval not found (admin-client.ts), as for an id that does not exist.
  assert.equal(show.code, 3, show.stdout);
  assert.match(show.stderr, /No approval has this id.*\(not_found\)/);
  assert.ok(!show.stdout.includes(ITEMS['sre-only']) && !show.stderr.includes(ITEMS['sre-only']));
  // The admin token's CLI is shown every approval.
  const all = await runCli(['approvals', 'list'], { env: { ...env, GATEHOUSE_ADMIN_TOKEN: ADMIN } });
  assert.equal(all.code, 0, all.stderr);
  for (const id of Object.values(ids)) assert.match(all.stdout, new RegExp(id));
});

/** Bodies a decision must not carry, none of them well-formed: not an object, a reason too long or not a string, a preview digest that is none, past the size limit. */
const MALFORMED_DECISIONS: Array<{ body: unknown; status: number; code: string }> = [
  { body: [1], status: 400, code: 'bad_request' },
  { body: { reason: 42 }, status: 400, code: 'bad_request' },
  { body: { previewSha256: 'not-a-digest' }, status: 400, code: 'bad_request' },
  { body: { reason: 'x'.repeat(20_000) }, status: 413, code: 'body_too_large' },
];

test('who may decide is judged before the body: a reviewer of another rule is refused as for an id that does not exist, 404 (and logged), whatever they send; the rule\'s reviewer is told what is wrong with it', async () => {
  const bob = await tokenFor('bob', ['approvers']);
  const carol = await tokenFor('carol', ['sre']);
  const path = `/approvals/${ids['sre-only']}/approve`;
  const refusedBefore = gw.logs.filter((l) => l.msg === 'approval decision refused' && l.reviewer === 'bob').length;
  for (const { body, status, code } of MALFORMED_DECISIONS) {
    // Refused first: bob is no reviewer of sre-only. Until 5 December he was told 400 (413) about his body.
    const refused = await adminRequest(gw.gateway.adminUrl!, 'POST', path, { bearer: bob, body });
    assert.equal(refused.status, 404, `${JSON.stringify(body).slice(0, 40)}: ${refused.text}`);
    assert.deepEqual(refused.json, (await adminRequest(gw.gateway.adminUrl!, 'POST', '/approvals/ap_000000000000000000000000/approve', { bearer: bob, body: {} })).json);
    // The other order: carol may decide it, so what is wrong with her body is what she hears, and nothing is decided.
    const told = await adminRequest(gw.gateway.adminUrl!, 'POST', path, { bearer: carol, body });
    assert.equal(told.status, status, `${JSON.stringify(body).slice(0, 40)}: ${told.text}`);
    assert.equal(told.json.error.code, code);
  }
  const refusals = gw.logs.filter((l) => l.msg === 'approval decision refused' && l.reviewer === 'bob');
  assert.equal(refusals.length - refusedBefore, MALFORMED_DECISIONS.length, 'each refusal is logged (and audited, as decide() records it)');
  assert.equal((await admin('GET', `/approvals/${ids['sre-only']}`, ADMIN)).json.approval.state, 'pending');
});

test('a decided approval stays hidden from reviewers of other rules', async () => {
  const decided = await admin('POST', `/approvals/${ids['sre-only']}/reject`, await tokenFor('carol', ['sre']));
  assert.equal(decided.status, 200, decided.text);
  assert.deepEqual(await listedRules(await tokenFor('bob', ['approvers']), 'rejected'), []);
  assert.deepEqual(await listedRules(await tokenFor('dave', ['sre']), 'rejected'), ['sre-only']);
});
