// An approved run longer than a minute (README §Approvals: "while the run is under way the others get
// `approval_pending` on the same approval, saying so"). The run's claim in the store had a lease of 60 s that
// nothing renewed, so an identical call made after that minute took the run for ended: it marked the
// approval used and opened a new one, and the reviewers got a second request for a call already running
// (approving it ran the call twice). The claim is now renewed while the run is under way.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const ADMIN = 'admin-token-0123456789abcdef';
/** Longer than the claim's 60 s lease. */
const RUN_MS = 66_000;
type Result = { isError?: boolean; structuredContent?: { error?: { code: string; running?: boolean } }; _meta?: Record<string, unknown> };

let up: CountingUpstream;
let gw: TestGateway;
before(async () => {
  up = await startCountingUpstream('modern');
  gw = await startGateway({
    // The call may run longer than the default wait for an answer's headers (timeouts.headersMs), as a long tool's upstream would allow.
    upstreams: [{ name: 'up', url: up.url, era: 'modern', timeouts: { headersMs: 120_000 } }],
    admin: { enabled: true, port: 0, token: ADMIN },
    policy: { approvals: [{ id: 'writes', annotations: { destructiveHint: true } }] },
  });
});
after(async () => {
  await gw.close();
  await up.close();
});

let n = 0;
async function recordSlowly(): Promise<Result> {
  const req = modernRequest(++n, 'tools/call', { name: 'record_slowly', arguments: { item: 'long', ms: RUN_MS } });
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(res.status, 200, res.text);
  return res.json().result as Result;
}

test('an identical call while an approved run of more than a minute is under way is told so, on the same approval', { timeout: 120_000 }, async () => {
  const pending = await recordSlowly();
  assert.equal(pending.structuredContent?.error?.code, 'approval_pending');
  const id = pending._meta!['dev.gatehouse/approval_id'] as string;
  const decided = await request(`${gw.gateway.adminUrl}/approvals/${id}/approve`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(decided.statusCode, 200);
  await decided.body.dump();

  const running = recordSlowly();
  await new Promise((r) => setTimeout(r, 62_000));
  const meanwhile = await recordSlowly();
  assert.equal(meanwhile.structuredContent?.error?.code, 'approval_pending', JSON.stringify(meanwhile));
  assert.equal(meanwhile._meta?.['dev.gatehouse/approval_id'], id, 'the same approval, not a new request to the reviewers');
  assert.equal(meanwhile.structuredContent?.error?.running, true);

  const ran = await running;
  assert.equal(ran.isError, undefined, JSON.stringify(ran));
  assert.equal(up.executions.length, 1);
  const pendingNow = await request(`${gw.gateway.adminUrl}/approvals?state=pending`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.deepEqual(((await pendingNow.body.json()) as { approvals: unknown[] }).approvals, [], 'no second request reached the reviewers');
});
