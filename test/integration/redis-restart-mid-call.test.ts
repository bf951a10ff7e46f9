// Redis stopped, or restarted, while a governed call is at its upstream: the call's audit record is written
// after the upstream answers, so a call whose record cannot be written then is answered 503
// GW_ERR_STATE_UNAVAILABLE (a structured, retryable error naming the call), never 200 with nothing in the
// chain; a call answered 200 is in the chain once Redis is back; and service resumes without a restart.
//
// GATEWAY-REQUIREMENTS: fail closed when the state store is unavailable; every answered call is audited.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { countingUpstreamAndRedis } from '../helpers/upstream-and-redis.js';
import { readyz, recordCall, untilServed } from '../helpers/store-outage.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const fixture = countingUpstreamAndRedis();

let n = 0;
function slowCall(gw: TestGateway, item: string, ms: number) {
  const req = modernRequest(++n, 'tools/call', { name: 'record_slowly', arguments: { item, ms } });
  return post(gw.url, req.body, req.headers);
}

async function recorded(prefix: string): Promise<Array<{ callId: string; outcome: string }>> {
  const raw = new Redis(fixture.redis.url);
  try {
    return (await raw.zrange(`${prefix}{audit}:log`, 0, -1)).map((r) => JSON.parse(r) as { callId: string; outcome: string });
  } finally {
    raw.disconnect();
  }
}

test('Redis stopped while a call is upstream: the call is answered 503 GW_ERR_STATE_UNAVAILABLE, not 200 unaudited; served again once Redis is back', { timeout: 60_000 }, async () => {
  const prefix = 'stop-mid:';
  const gw = await startGateway({ upstreams: [{ name: 'up', url: fixture.up.url, era: 'modern' }], store: { kind: 'redis', url: fixture.redis.url, keyPrefix: prefix, commandTimeoutMs: 1_000 } });
  let down = false;
  try {
    assert.equal((await recordCall(gw, 'before')).status, 200);
    const call = slowCall(gw, 'mid-stop', 1_500);
    await sleep(300);
    await fixture.redis.stop();
    down = true;
    const answer = await call;
    assert.equal(fixture.up.executions.filter((e) => e.item === 'mid-stop').length, 1, 'the call ran upstream');
    assert.equal(answer.status, 503, answer.text);
    const error = answer.json().error;
    assert.equal(error.data.code, 'GW_ERR_STATE_UNAVAILABLE', answer.text);
    assert.equal(error.data.retryable, true, answer.text);
    assert.equal(typeof error.data.callId, 'string', answer.text);
    assert.equal((await readyz(gw)).status, 503);
    await fixture.redis.start();
    down = false;
    const back = await untilServed(() => recordCall(gw, 'after'));
    assert.equal(back.status, 200, back.text);
    assert.equal((await readyz(gw)).status, 200);
    const records = await recorded(prefix);
    assert.ok(!records.some((r) => r.callId === error.data.callId && r.outcome === 'ok'), 'the refused call is not recorded as done');
    assert.equal(records.filter((r) => r.outcome === 'ok').length, 2, JSON.stringify(records));
  } finally {
    // Started again only if the test stopped there: a second server on the port fails, and is the one stop() knows.
    if (down) await fixture.redis.start();
    await gw.close();
  }
});

test('Redis restarted while calls are upstream: each is answered 200 with its record in the chain, or 503 GW_ERR_STATE_UNAVAILABLE', { timeout: 60_000 }, async () => {
  const prefix = 'restart-mid:';
  const gw = await startGateway({ upstreams: [{ name: 'up', url: fixture.up.url, era: 'modern' }], store: { kind: 'redis', url: fixture.redis.url, keyPrefix: prefix, commandTimeoutMs: 1_000 } });
  try {
    assert.equal((await recordCall(gw, 'before')).status, 200);
    // Calls ending at several points after the restart: before the store has reconnected, and after.
    const calls = [600, 900, 1_500, 2_500, 4_000].map((ms, i) => slowCall(gw, `mid-restart-${i}`, ms));
    await sleep(200);
    await fixture.redis.stop();
    // Down long enough that the first call ends while Redis is: its record cannot be written then.
    await sleep(700);
    await fixture.redis.start();
    const answers = await Promise.all(calls);
    assert.equal(answers[0]!.status, 503, `the call that ended while Redis was down: ${answers[0]!.text}`);
    assert.equal(answers.at(-1)!.status, 200, `the call that ended seconds after Redis was back: ${answers.at(-1)!.text}`);
    const records = await untilServed(() => recordCall(gw, 'after')).then(() => recorded(prefix));
    for (const a of answers) {
      if (a.status === 200) {
        // Matched by item: the answer's text names it, and the record's arguments hold it.
        const item = /recorded (\S+) slowly/.exec(a.text)?.[1];
        assert.ok(item, a.text);
        const ok = records.filter((r) => r.outcome === 'ok' && JSON.stringify(r).includes(`"${item}"`));
        assert.equal(ok.length, 1, `the call answered 200 (${item}) is in the chain once: ${JSON.stringify(records)}`);
      } else {
        assert.equal(a.status, 503, a.text);
        assert.equal(a.json().error.data.code, 'GW_ERR_STATE_UNAVAILABLE', a.text);
      }
    }
  } finally {
    await gw.close();
  }
});
