// Reviewers by OAuth group (issue 14 item 3): the admin API takes, instead of the admin token, an access
// token (verified as on the MCP endpoint: issuer, audience, signature through the JWKS) whose groups include
// one of admin.groups; a rule's `reviewers` then limits who may decide its approvals, and the decision
// records the reviewer's subject. Tokens come from a real authorization server on loopback.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import type { AuthServer } from '../helpers/auth-server.js';
import type { CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startReviewerGateway, type ReviewerGateway } from '../helpers/reviewer-gateway.js';
import { adminRequest, modernRequest, post } from '../helpers/http.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
let reviewers: ReviewerGateway;
let as: AuthServer;
let up: CountingUpstream;
let gw: TestGateway;
let publicUrl: string;

before(async () => {
  reviewers = await startReviewerGateway({
    apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }],
    // No clock skew: an inbox session lasts until its token stops being accepted, exp + clockSkewSeconds, and
    // the test below waits that out.
    oauth: { clockSkewSeconds: 0 },
    admin: { enabled: true, port: 0, groups: ['sre', 'approvers'] },
    policy: { approvals: [{ id: 'sre-only', tools: ['up/record'], reviewers: { groups: ['sre'] } }] },
  });
  ({ as, up, gw, publicUrl } = reviewers);
});
after(() => reviewers?.close());

/** The admin API with a bearer; a POST (a decision) carries an empty JSON body. */
const admin = (method: 'GET' | 'POST', path: string, bearer: string) => adminRequest(gw.gateway.adminUrl!, method, path, { bearer, body: method === 'POST' ? {} : undefined });
const tokenFor = (sub: string, groups: string[]) => reviewers.tokenFor(sub, groups);

test('an access token of an admin group lists approvals; only a reviewer the rule names is shown them and may decide, and the decision names them', async () => {
  const req = modernRequest(1, 'tools/call', { name: 'record', arguments: { item: 'oauth-1' } });
  const first = (await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}` })).json().result as { _meta: Record<string, string> };
  const id = first._meta['dev.gatehouse/approval_id']!;

  const approver = await tokenFor('bob', ['approvers']);
  const listed = await admin('GET', '/approvals?state=pending', approver);
  assert.equal(listed.status, 200);
  // Not among the rule's reviewers: not shown the approval (approvals-visibility.test.ts), and not let decide it.
  assert.ok(!listed.json.approvals.some((a: { id: string }) => a.id === id));
  const sre = await admin('GET', '/approvals?state=pending', await tokenFor('carol', ['sre']));
  assert.ok(sre.json.approvals.some((a: { id: string }) => a.id === id));
  const refused = await admin('POST', `/approvals/${id}/approve`, approver);
  assert.equal(refused.status, 404);
  assert.equal(refused.json.error.code, 'not_found');

  const outsider = await admin('GET', '/approvals', await tokenFor('eve', ['sales']));
  assert.equal(outsider.status, 403);
  assert.equal((await admin('GET', '/approvals', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJldmUifQ.')).status, 401);
  const foreignAudience = await admin('GET', '/approvals', await as.sign({ sub: 'carol', aud: 'https://elsewhere.example/mcp', groups: ['sre'] }));
  assert.equal(foreignAudience.status, 401);
  // An API key the MCP endpoint takes is as invalid here as a guess, answered the same (it once got 403
  // "valid, but in none of the admin groups": an oracle for MCP credentials on a port with no failure limit).
  const apiKey = await admin('GET', '/approvals', ALICE);
  const guess = await admin('GET', '/approvals', 'gh_not_a_key_0123456789abcdefghijklmnop');
  assert.deepEqual([apiKey.status, apiKey.json], [guess.status, guess.json]);
  assert.equal(apiKey.status, 401);

  const decided = await admin('POST', `/approvals/${id}/approve`, await tokenFor('carol', ['sre']));
  assert.equal(decided.status, 200, JSON.stringify(decided.json));
  assert.equal(decided.json.approval.decision.by, 'carol');
  const again = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}` });
  assert.equal(again.json().result.isError, undefined);
  assert.equal(up.executions.filter((e) => e.item === 'oauth-1').length, 1);
});

test('an inbox session opened with an access token ends when the token does, not 8 hours later', async () => {
  // Two whole seconds at least: with floor() the token had 1-2 s left when signed, and a login that crossed
  // the next second boundary found under 1 s left, a Max-Age of 0 (seen once in CI).
  const exp = Math.ceil(Date.now() / 1000) + 2;
  const token = await as.sign({ sub: 'dana', aud: publicUrl, groups: ['sre'], exp });
  const res = await request(`${gw.gateway.adminUrl}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ credential: token }).toString() });
  await res.body.dump();
  assert.equal(res.statusCode, 303);
  const setCookie = String(res.headers['set-cookie']);
  const maxAge = Number(/Max-Age=(\d+)/.exec(setCookie)?.[1]);
  assert.ok(maxAge >= 1 && maxAge <= 3, `the cookie lives as long as the token: ${setCookie}`);
  const cookie = setCookie.split(';')[0]!;
  const list = async () => {
    const r = await request(`${gw.gateway.adminUrl}/approvals`, { headers: { cookie } });
    await r.body.dump();
    return r.statusCode;
  };
  assert.equal(await list(), 200, 'the session works while the token would');
  await new Promise((r) => setTimeout(r, Math.max(0, exp * 1000 - Date.now()) + 50));
  assert.equal(await list(), 401, 'the session ended with the token');
});
