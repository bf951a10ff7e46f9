// On Redis, budget windows run on Redis' own clock (README, State: "Counters and buckets run as Lua scripts
// on Redis' own clock, so a replica with a skewed clock cannot widen a window"). A budget_exhausted refusal
// tells the caller when to retry (`_meta["dev.gatehouse/retry_after"]`, the text). Until 4 December that was
// the window's end on Redis' clock less the replica's own time: a replica whose clock was ten minutes behind
// told a caller of a per-minute budget to wait over ten minutes (and one ahead, to retry at once, into
// another refusal). Now the wait is measured on the store's clock, as the rate limit's and the breaker's are.
// The replica here is the test process itself, its clock set back; Redis' is left alone.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
let up: CountingUpstream;
let gw: TestGateway;
const realNow = Date.now;
before(async () => {
  redis = await startRedis();
  up = await startCountingUpstream('modern');
  // The replica's clock, ten minutes behind Redis', from its start.
  Date.now = () => realNow() - 10 * 60_000;
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    store: { kind: 'redis', url: redis.url, keyPrefix: 'skew:' },
    policy: { budgets: [{ id: 'per-minute', per: 'subject', window: 'minute', limit: 1 }] },
  });
});
after(async () => {
  Date.now = realNow;
  await gw.close();
  await up.close();
  await redis.stop();
});

let n = 0;
async function lookup(item: string) {
  const req = modernRequest(++n, 'tools/call', { name: 'lookup', arguments: { item } });
  const res = await post(gw.url, req.body, req.headers);
  return res.json().result as { content: Array<{ text: string }>; structuredContent?: { error?: { code: string } }; _meta?: Record<string, unknown> };
}

test('a replica whose clock is behind tells the caller the wait on the store clock, never longer than the window', async () => {
  assert.equal((await lookup('first')).structuredContent?.error?.code, undefined, 'the one call of the minute runs');
  // The next is refused, unless a new minute began in between: then the one after it is.
  let refused = await lookup('second');
  if (refused.structuredContent?.error?.code === undefined) refused = await lookup('third');
  assert.equal(refused.structuredContent?.error?.code, 'budget_exhausted');
  const retryAfter = refused._meta?.['dev.gatehouse/retry_after'] as number;
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `a per-minute budget resets within the minute: retry_after ${retryAfter} s`);
  assert.match(refused.content[0]!.text, /retry in \d+ s\./, refused.content[0]!.text);
});
