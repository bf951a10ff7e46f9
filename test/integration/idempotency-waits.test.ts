// A duplicate write waits for the first call with its key as long as that call may run (README §Audit and
// idempotent writes: "the same key while the first call runs … waits for it and gets its answer"). Until
// 3 December it waited the upstream's `timeouts.headersMs` only, then heard `outcome_unknown` ("did not
// finish … may have taken effect") while the first was still running and about to succeed; and a duplicate
// whose first call gave its key back (the connection was refused: nothing ran) heard the same, where it may
// take the key itself.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { waitFor } from '../helpers/otlp.js';

let up: CountingUpstream;
let gw: TestGateway;

before(async () => {
  up = await startCountingUpstream('legacy');
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy', timeouts: { headersMs: 800 } }], idempotency: { requireKeys: true } });
});
after(async () => {
  await gw?.close();
  await up?.close();
});

let n = 0;
async function write(url: string, key: string, ms: number): Promise<string> {
  const req = modernRequest(++n, 'tools/call', { name: 'record_slowly', arguments: { item: 'w', ms }, _meta: { idempotencyKey: key } });
  return (await post(url, req.body, req.headers)).text;
}

test('a duplicate waits past headersMs for a first call still running, and gets its answer; the write runs once', async () => {
  const key = `wait-${Date.now()}`;
  const first = write(gw.url, key, 2_500);
  // The first holds the key, and is running, once the upstream has it.
  await waitFor('the first call to reach the upstream', () => up.received.find((body) => body.includes(key)));
  const second = await write(gw.url, key, 2_500);
  const answered = await first;
  assert.match(answered, /recorded w slowly/);
  assert.doesNotMatch(second, /outcome_unknown/);
  assert.match(second, /recorded w slowly/);
  assert.match(second, /dev\.gatehouse\/replayed/);
  assert.equal(up.timesExecuted(key), 1);
});

test('a duplicate whose first call gave the key back (never sent) takes the key itself', async () => {
  const down = await startCountingUpstream('modern');
  const port = Number(new URL(down.url).port);
  const g = await startGateway({ upstreams: [{ name: 'up', url: down.url, era: 'modern' }], idempotency: { requireKeys: true } });
  try {
    // Listed once, then gone: calls are refused at connect, so nothing runs and the key is given back.
    const warm = modernRequest(1, 'tools/call', { name: 'lookup', arguments: { item: 'x' } });
    await post(g.url, warm.body, warm.headers);
    await down.close();
    const key = `given-back-${Date.now()}`;
    const [a, b] = await Promise.all([write(g.url, key, 0), write(g.url, key, 0)]);
    for (const answer of [a, b]) {
      assert.doesNotMatch(answer, /outcome_unknown/, 'nothing ran: the outcome is known');
      assert.match(answer, /GW_ERR_UPSTREAM_UNREACHABLE/);
    }
    // And the key is still free: the upstream back, a retry runs.
    const back = await startCountingUpstream('modern', port);
    try {
      assert.match(await write(g.url, key, 0), /recorded w slowly/);
      assert.equal(back.timesExecuted(key), 1);
    } finally {
      await back.close();
    }
  } finally {
    await g.close();
  }
});
