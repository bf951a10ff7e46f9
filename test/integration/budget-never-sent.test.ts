// A budget counts the calls that run (README, Policy: budgets; "A run that ... never reached the upstream is
// given back, and so is what the call spent of a budget", Approvals). A call whose upstream refused the
// connection never reached it: nothing ran. Until 4 December its spend was kept, so while an upstream was
// down (restarting, redeployed) each try of a client used up its budget, and once the upstream was back the
// caller was refused budget_exhausted for calls that had never run, until the window ended (a day, a month).
// The same for a call Gatehouse's adapter refuses itself before anything goes up: a legacy client's request
// whose id a request of its session still running holds (2025-11-25/basic/index.mdx §Requests), where
// Gatehouse bridges the session to a modern upstream.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { hashKey } from '../../src/auth/key-hash.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGatewayOverCountingUpstream } from '../helpers/counting-gateway.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { legacySession, LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';

let up: CountingUpstream | undefined;
let gw: TestGateway;
before(async () => {
  ({ up, gw } = await startGatewayOverCountingUpstream({
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }] },
    policy: { budgets: [{ id: 'records', per: 'subject', tools: ['up/record'], window: 'month', limit: 2 }] },
  }));
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

test('a request refused for reusing the id of one still running spends nothing', async () => {
  const slowUp = await startCountingUpstream('modern');
  const bridged = await startGateway({
    upstreams: [{ name: 'up', url: slowUp.url, era: 'modern' }],
    policy: { budgets: [{ id: 'writes', per: 'subject', tools: ['up/record*'], window: 'month', limit: 2 }] },
  });
  try {
    const session = await legacySession(bridged.url, {}, '2025-06-18');
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    await post(bridged.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
    const lastMessage = (text: string) => JSON.parse(text.split('\n').filter((l) => l.startsWith('data:')).at(-1)?.slice(5) ?? text) as { result?: { content: Array<{ text: string }>; structuredContent?: { error?: { code: string } } }; error?: { code: number } };
    const first = post(bridged.url, rpc(7, 'tools/call', { name: 'record_slowly', arguments: { item: 'slow', ms: 4_000 } }), headers);
    // The first is running on the session before the second is sent.
    for (let i = 0; i < 100 && slowUp.received.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(slowUp.received.length, 1, 'the first call reached the upstream');
    const second = lastMessage((await post(bridged.url, rpc(7, 'tools/call', { name: 'record', arguments: { item: 'same-id' } }), headers)).text);
    assert.equal(second.error?.code, -32600, `refused: the id is held by the running call: ${JSON.stringify(second)}`);
    assert.match(lastMessage((await first).text).result?.content[0]?.text ?? '', /^recorded slow slowly/);
    const next = lastMessage((await post(bridged.url, rpc(8, 'tools/call', { name: 'record', arguments: { item: 'next' } }), headers)).text);
    assert.equal(next.result?.structuredContent?.error?.code, undefined, `the second call of a budget of 2 runs: ${JSON.stringify(next)}`);
    assert.match(next.result?.content[0]?.text ?? '', /^recorded next/);
    const over = lastMessage((await post(bridged.url, rpc(9, 'tools/call', { name: 'record', arguments: { item: 'over' } }), headers)).text);
    assert.equal(over.result?.structuredContent?.error?.code, 'budget_exhausted', 'the two that ran spent the budget');
  } finally {
    await bridged.close();
    await slowUp.close();
  }
});
