// Driving a gateway whose store is down or takes no writes (a full disk, a full Redis, Redis stopped): its
// readiness, governed calls to the counting upstream, and the checks every such outage shares. What makes
// the store fail, and what brings it back, stays in each test.

import assert from 'node:assert/strict';
import { request } from 'undici';
import type { CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import type { TestGateway } from './gateway.js';
import { modernRequest, post } from './http.js';

type Answer = Awaited<ReturnType<typeof post>>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** GET /readyz: its status and its body, which names the store and whether it is up. */
export async function readyz(gw: TestGateway) {
  const res = await request(`${gw.origin}/readyz`);
  return { status: res.statusCode, body: (await res.body.json()) as { status: string; store?: { kind: string; up: boolean } } };
}

let n = 0;
/** A governed call that writes: the counting upstream's `record` tool, as a stateless 2026-07-28 request. */
export async function recordCall(gw: TestGateway, item: string): Promise<Answer> {
  const req = modernRequest(++n, 'tools/call', { name: 'record', arguments: { item } });
  return post(gw.url, req.body, req.headers);
}

/**
 * With the store just made unable to write: the first call cannot know it yet (it runs, and is refused when
 * its record cannot be kept); once the guard's probe (every second) has seen it, /readyz says not ready and
 * every governed call is refused 503 GW_ERR_STATE_UNAVAILABLE before it reaches the upstream.
 */
export async function assertRefusedWhileStoreTakesNoWrites(gw: TestGateway, up: CountingUpstream, kind: 'sqlite' | 'redis'): Promise<void> {
  const first = await recordCall(gw, 'first-when-full');
  assert.equal(first.status, 503, first.text);
  // Longer than the guard's probe (every second).
  await sleep(2_500);
  const ready = await readyz(gw);
  assert.equal(ready.status, 503, JSON.stringify(ready.body));
  assert.deepEqual(ready.body.store, { kind, up: false });
  const executed = up.executions.length;
  for (let i = 0; i < 3; i++) {
    const refused = await recordCall(gw, `while-full-${i}`);
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.json().error.data.code, 'GW_ERR_STATE_UNAVAILABLE', refused.text);
    await sleep(600);
  }
  assert.equal(up.executions.length, executed, 'no call ran upstream while its record could not be written');
}

/**
 * Makes `call` every 100 ms until it is answered 200, at most `tries` times, and returns the last answer:
 * a store that is back is seen by the guard's next probe, so service resumes without a restart.
 */
export async function untilServed(call: () => Promise<Answer>, tries = 50): Promise<Answer> {
  let answer = await call();
  for (let i = 1; i < tries && answer.status !== 200; i++) {
    await sleep(100);
    answer = await call();
  }
  return answer;
}
