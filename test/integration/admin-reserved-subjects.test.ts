// Who decided must be readable from the record (DESIGN.md §7, the admin contract): a decision names the
// reviewer by subject, `admin-token` for the admin token (the break-glass operator) and `user` for the
// caller's own answer to an elicitation (`by: user`). An OAuth subject spelled like either of those would
// make a reviewer's decision, or a pin they accept, read in the API, the audit and the caller's message as
// the break-glass token's or the end user's. Until 4 December an access token of an admin group with
// `sub: "admin-token"` or `sub: "user"` was taken, and its decisions recorded so; such a token is now
// refused by the admin API and the inbox login (403), and the admin token's own decisions still say
// `admin-token`. Real parts: an authorization server on loopback, the running gateway, the admin API over
// HTTP, real SQLite.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import type { AuthServer } from '../helpers/auth-server.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startReviewerGateway, type ReviewerGateway } from '../helpers/reviewer-gateway.js';
import { adminRequest, modernRequest, post } from '../helpers/http.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
const ADMIN = 'admin-token-0123456789abcdef';
let reviewers: ReviewerGateway;
let as: AuthServer;
let gw: TestGateway;
let publicUrl: string;

before(async () => {
  reviewers = await startReviewerGateway({
    apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }],
    admin: { enabled: true, port: 0, token: ADMIN, groups: ['sre'] },
    policy: { approvals: [{ id: 'anyone', tools: ['up/record'] }] },
  });
  ({ as, gw, publicUrl } = reviewers);
});
after(() => reviewers?.close());

let n = 0;
async function held(item: string): Promise<string> {
  const req = modernRequest(++n, 'tools/call', { name: 'record', arguments: { item } });
  const res = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}` });
  const result = res.json().result as { structuredContent?: { error?: { code: string } }; _meta?: Record<string, string> };
  assert.equal(result.structuredContent?.error?.code, 'approval_pending', res.text);
  return result._meta!['dev.gatehouse/approval_id']!;
}

/** The admin API with a bearer; a POST (a decision) carries an empty JSON body. */
const admin = (method: 'GET' | 'POST', path: string, bearer: string) => adminRequest(gw.gateway.adminUrl!, method, path, { bearer, body: method === 'POST' ? {} : undefined });

for (const reserved of ['admin-token', 'user']) {
  test(`an access token of an admin group whose subject is "${reserved}" is refused by the admin API and the inbox login, and decides nothing`, async () => {
    const id = await held(`reserved-${reserved}`);
    const token = await as.sign({ sub: reserved, aud: publicUrl, groups: ['sre'] });
    const listed = await admin('GET', '/approvals', token);
    assert.equal(listed.status, 403, JSON.stringify(listed.json));
    assert.match(listed.json.error.message, /reserved/);
    const decided = await admin('POST', `/approvals/${id}/approve`, token);
    assert.equal(decided.status, 403, JSON.stringify(decided.json));
    const login = await request(`${gw.gateway.adminUrl}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ credential: token }).toString() });
    const page = await login.body.text();
    assert.equal(login.statusCode, 403, page);
    assert.equal(login.headers['set-cookie'], undefined, 'no session');
    const shown = await admin('GET', `/approvals/${id}`, ADMIN);
    assert.equal(shown.json.approval.state, 'pending', 'nothing was decided');
  });
}

test('the admin token\'s decisions still name admin-token, and another subject of the group still decides under its own', async () => {
  const byToken = await admin('POST', `/approvals/${await held('by-token')}/approve`, ADMIN);
  assert.equal(byToken.json.approval.decision.by, 'admin-token');
  const byCarol = await admin('POST', `/approvals/${await held('by-carol')}/approve`, await as.sign({ sub: 'carol', aud: publicUrl, groups: ['sre'] }));
  assert.equal(byCarol.status, 200, JSON.stringify(byCarol.json));
  assert.equal(byCarol.json.approval.decision.by, 'carol');
});
