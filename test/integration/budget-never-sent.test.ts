// A budget counts the calls that run (README, Policy: budgets; "A run that ... never reached the upstream is
// given back, and so is what the call spent of a budget", Approvals). A call whose upstream refused the
// connection never reached it: nothing ran. Until 4 December its spend was kept, so while an upstream was
// down (restarting, redeployed) each try of a client used up its budget, and once the upstream was back the
// caller was refused budget_exhausted for calls that had never run, until the window ended (a day, a month).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { hashKey } from '../../src/auth/key-hash.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';

let up: CountingUpstream | undefined;
let gw: TestGateway;
before(async () => {
  up = await startCountingUpstream('modern');
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }] },
    policy: { budgets: [{ id: 'records', per: 'subject', tools: ['up/record'], window: 'month', limit: 2 }] },
  });
});
after(async () => {
  await gw.close();
  await up?.close();
});

let n = 0;
async function call(name: string, item: string) {
  const req = modernRequest(++n, 'tools/call', { name, arguments: { item } });
  const res = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}` });
  return { status: res.status, text: res.text, body: res.json() as { result?: { isError?: boolean; content: Array<{ text: string }>; structuredContent?: { error?: { code: string } } }; error?: { data?: { code?: string } } } };
}

test('calls whose upstream refused the connection spend nothing: once it is back, the whole budget is there', async () => {
  // The catalog has the tool list (a lookup, which the budget does not select), then the upstream goes away.
  assert.equal((await call('lookup', 'warm')).body.result?.isError, undefined);
  const port = Number(new URL(up!.url).port);
  await up!.close();
  up = undefined;
  for (let i = 0; i < 2; i++) {
    const down = await call('record', `while-down-${i}`);
    assert.equal(down.body.error?.data?.code, 'GW_ERR_UPSTREAM_UNREACHABLE', `the upstream cannot be reached: ${down.text}`);
  }
  up = await startCountingUpstream('modern', port);
  for (let i = 0; i < 2; i++) {
    const back = await call('record', `back-${i}`);
    assert.equal(back.body.result?.structuredContent?.error?.code, undefined, `call ${i + 1} of a budget of 2 runs: ${back.text}`);
    assert.match(back.body.result?.content[0]?.text ?? '', /^recorded back-/);
  }
  const over = await call('record', 'over');
  assert.equal(over.body.result?.structuredContent?.error?.code, 'budget_exhausted', 'the two that ran spent the budget');
});
