// shutdown.delayMs, in process: gateway.withdraw() fails /readyz while requests are still served, for the
// running config's delay; skipDelay() (serve's answer to a second stop signal) and close() cut it short.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { jsonResult, sleep, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { post, rpc } from '../helpers/http.js';

const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { content: [{ type: 'text', text: 'served' }] }));
after(() => up.close());

const get = async (url: string): Promise<{ status: number; body: Record<string, unknown> }> => {
  const res = await request(url);
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
};

test('during the delay /readyz is 503 with a reason, /healthz 200 and calls are served; skipDelay ends it at once, once', async () => {
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }], shutdown: { delayMs: 60_000 } });
  try {
    assert.equal((await get(`${gw.origin}/readyz`)).status, 200);
    assert.equal(gw.gateway.skipDelay(), false, 'no delay runs before a stop');
    let over = false;
    const withdrawn = gw.gateway.withdraw().then(() => (over = true));
    const readyz = await get(`${gw.origin}/readyz`);
    assert.equal(readyz.status, 503);
    assert.equal(readyz.body.reason, 'shutting_down');
    assert.match(String(readyz.body.message), /shutting down/);
    assert.equal((await get(`${gw.origin}/healthz`)).status, 200);
    const call = await post(gw.url, rpc(1, 'tools/call', { name: 'anything' }));
    assert.equal(call.status, 200, call.text);
    assert.equal(call.json().result.content[0].text, 'served');
    assert.equal(over, false, 'the delay still runs');
    assert.ok(gw.logs.some((l) => String(l.msg).includes('shutdown.delayMs') && l.delayMs === 60_000), JSON.stringify(gw.logs));
    assert.equal(gw.gateway.skipDelay(), true);
    await Promise.race([withdrawn, sleep(2000)]);
    assert.equal(over, true, 'skipDelay ended the delay');
    assert.equal(gw.gateway.skipDelay(), false, 'nothing left to skip');
  } finally {
    await gw.close();
  }
});

test('close() during the delay ends it and drains; with delayMs 0 withdraw resolves at once', async () => {
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }], shutdown: { delayMs: 60_000 } });
  let over = false;
  const withdrawn = gw.gateway.withdraw().then(() => (over = true));
  await Promise.race([gw.close(), sleep(5000)]);
  await Promise.race([withdrawn, sleep(1000)]);
  assert.equal(over, true);

  const instant = await startGateway({ upstreams: [{ name: 'up', url: up.url }] });
  try {
    // Causal, not timed: with no delay the withdraw is over before the event loop turns (setImmediate), where
    // no timer, however short, could have ended it.
    const first = await Promise.race([instant.gateway.withdraw().then(() => 'withdrawn'), new Promise((r) => setImmediate(r, 'the loop turned first'))]);
    assert.equal(first, 'withdrawn', 'with delayMs 0 withdraw resolves at once');
    assert.equal((await get(`${instant.origin}/readyz`)).status, 503, 'not ready from the stop on, even without a delay');
  } finally {
    await instant.close();
  }
});
