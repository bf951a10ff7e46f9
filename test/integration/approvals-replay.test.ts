// An approved run answered by an idempotency replay (README §Approvals: "A run that a later stage refuses
// ... or that never reached the upstream is given back"; `executed` is recorded "once the run has reached
// the upstream"). A write retried with the same idempotency key is answered with the stored result and
// nothing runs (README §Audit and idempotent writes); under an approval with `reuse: 2` that retry took the
// second approved run and left a second `executed` audit record, though the upstream ran the call once:
// the caller's next call (a new key) then found the approval used up and had to ask a reviewer again.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const ADMIN = 'admin-token-0123456789abcdef';
type Result = { isError?: boolean; structuredContent?: { error?: { code: string } }; _meta?: Record<string, unknown> };

let up: CountingUpstream;
let gw: TestGateway;
const storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-approval-replay-')), 'gatehouse.db');

before(async () => {
  up = await startCountingUpstream('modern');
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    store: { kind: 'sqlite', path: storePath },
    admin: { enabled: true, port: 0, token: ADMIN },
    policy: { approvals: [{ id: 'writes', annotations: { destructiveHint: true }, reuse: 2 }] },
    idempotency: { requireKeys: true },
  });
});
after(async () => {
  await gw.close();
  await up.close();
});

let n = 0;
async function record(key: string): Promise<Result> {
  const req = modernRequest(++n, 'tools/call', { name: 'record', arguments: { item: 'twice-approved' } });
  const body = JSON.parse(req.body) as { params: { _meta?: Record<string, unknown> } };
  body.params._meta = { ...body.params._meta, idempotencyKey: key };
  const res = await post(gw.url, JSON.stringify(body), req.headers);
  assert.equal(res.status, 200, res.text);
  return res.json().result as Result;
}

test('a retry answered by an idempotency replay takes no approved run and records no execution', async () => {
  const pending = await record('order-0001-first');
  assert.equal(pending.structuredContent?.error?.code, 'approval_pending');
  const approvalId = pending._meta!['dev.gatehouse/approval_id'] as string;
  const decided = await request(`${gw.gateway.adminUrl}/approvals/${approvalId}/approve`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(decided.statusCode, 200);
  await decided.body.dump();

  const ran = await record('order-0001-first');
  assert.equal(ran.isError, undefined, JSON.stringify(ran));
  // The answer was lost on the way, say: the client retries with the same key, and gets the stored answer.
  const replayed = await record('order-0001-first');
  assert.equal(replayed.isError, undefined, JSON.stringify(replayed));
  assert.equal(replayed._meta?.['dev.gatehouse/replayed'], true);
  assert.equal(up.executions.length, 1, 'the replay ran nothing');

  // The approval allows two runs, and one has run: the next call (a new write, a new key) runs.
  const second = await record('order-0002-second');
  assert.equal(second.isError, undefined, JSON.stringify(second));
  assert.equal(up.executions.length, 2);
  // Both runs are used now.
  assert.equal((await record('order-0003-third')).structuredContent?.error?.code, 'approval_pending');
  assert.equal(up.executions.length, 2);

  const store = new SqliteStore(storePath);
  try {
    const records = await store.readAudit({ limit: 10_000 });
    const executed = records.filter((r) => r.approvalId === approvalId && r.outcome === 'executed');
    assert.deepEqual(executed.map((r) => r.run).sort(), [1, 2], 'one executed record per run that reached the upstream');
  } finally {
    await store.close();
  }
});
