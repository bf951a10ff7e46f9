// An idempotency claim whose answer a broken connection to Redis lost: Redis took the key for the call
// (in flight, this call's owner), the call was refused before it ran (503 GW_ERR_STATE_UNAVAILABLE, "retry
// later with the same key"), and the key stayed taken by a call that never ran. The retry it asked for then
// found the key "started" and was told outcome_unknown (check its effect, use a new key), for the key's
// whole TTL, though nothing had run. The key is now given back (released, which only ever frees this
// call's own in-flight claim) once Redis answers again, and a retry meanwhile waits for that: the retry
// runs the write, once.
//
// Real redis-server behind a relay that drops the connection after Redis answered the claim.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedisRelay, type RedisRelay } from '../helpers/redis-relay.js';

let up: CountingUpstream;
let redis: TestRedis;
let relay: RedisRelay;
let gw: TestGateway;
before(async () => {
  up = await startCountingUpstream('modern');
  redis = await startRedis();
  relay = await startRedisRelay(redis.port);
  gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'redis', url: relay.url, keyPrefix: 'lost-claim:', commandTimeoutMs: 2_000 }, idempotency: { requireKeys: true } });
});
after(async () => {
  await gw.close();
  await relay.close();
  await up.close();
  await redis.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let n = 0;
async function write(item: string, key: string) {
  const req = modernRequest(++n, 'tools/call', { name: 'record', arguments: { item }, _meta: { idempotencyKey: key } });
  return post(gw.url, req.body, req.headers);
}

test('a write whose claim answer was lost is refused, and its retry with the same key runs it once', { timeout: 60_000 }, async () => {
  // The scripts are loaded and the connection is ready.
  assert.equal((await write('warm-up', 'lost-claim-key-0000')).status, 200);
  const before = relay.dropped;
  // The claim is the only command that carries an in-flight record.
  relay.dropAfter('"state":"in_flight"');
  const first = await write('the-write', 'lost-claim-key-0001');
  assert.equal(relay.dropped, before + 1, 'the relay dropped the connection after Redis answered the claim');
  assert.equal(first.status, 503, first.text);
  assert.equal(first.json().error.data.code, 'GW_ERR_STATE_UNAVAILABLE');
  assert.equal(up.timesExecuted('lost-claim-key-0001'), 0, 'the refused call did not run');
  // The client retries, as the 503 says (Retry-After: 1), until the store serves again.
  let retry;
  for (let i = 0; i < 30; i++) {
    await sleep(200);
    retry = await write('the-write', 'lost-claim-key-0001');
    if (retry.status !== 503) break;
  }
  assert.equal(retry?.status, 200, retry?.text);
  const result = retry!.json().result;
  assert.equal(result.structuredContent?.error?.code, undefined, `the retry ran, not refused: ${retry!.text}`);
  assert.match(result.content[0].text, /^recorded the-write/);
  assert.equal(up.timesExecuted('lost-claim-key-0001'), 1);
});
