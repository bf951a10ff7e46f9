// Circuit breakers and calls that never reach the upstream. A breaker judges the upstream's health by what
// the upstream answered (README, Policy: "Failures are the upstream's"); an answer Gatehouse gives without
// asking the upstream says nothing of it. An idempotency replay is such an answer: the stored result of an
// earlier run (README, Idempotent writes: "the stored answer ...; nothing runs"). Until 4 December the
// breaker counted a replay as the upstream succeeding: replays between failures reset the consecutive
// count, so an upstream that failed every call it was sent never had its circuit opened.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';

let up: CountingUpstream;
let gw: TestGateway;
before(async () => {
  up = await startCountingUpstream('modern');
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }] },
    metrics: { enabled: true, port: 0 },
    idempotency: { requireKeys: true },
    // A long cool-down: nothing here waits for it, so no step depends on how fast the machine is.
    policy: { breakers: [{ id: 'health', per: 'upstream', consecutiveFailures: 2, coolDownSeconds: 600 }] },
  });
});
after(async () => {
  await gw.close();
  await up.close();
});

let n = 0;
async function call(name: string, args: Record<string, unknown>, key: string) {
  const req = modernRequest(++n, 'tools/call', { name, arguments: args, _meta: { idempotencyKey: key } });
  const res = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}` });
  return { status: res.status, result: res.json().result as { isError?: boolean; structuredContent?: { error?: { code: string } }; _meta?: Record<string, unknown> } | undefined };
}

/** The breaker's state as /metrics shows it, once it is `want` (recorded on the side: a bounded wait), else the last seen. */
async function circuit(want: string): Promise<string | undefined> {
  let seen: string | undefined;
  for (let i = 0; i < 40; i++) {
    const text = await (await request(gw.gateway.metricsUrl!)).body.text();
    seen = /^gatehouse_circuit_state\{breaker="health",target="up"\} (\S+)$/m.exec(text)?.[1];
    if (seen === want) return seen;
    await new Promise((r) => setTimeout(r, 50));
  }
  return seen;
}

describe('a breaker counts only what the upstream answered', () => {
  test('an idempotency replay between two upstream failures is no success: the circuit opens', async () => {
    const stored = await call('record', { item: 'stored-before' }, 'breaker-replay-key-1');
    assert.equal(stored.result?.isError, undefined, 'the first run succeeded, and its answer is stored');
    up.failing = true;
    try {
      assert.equal((await call('record', { item: 'fail-1' }, 'breaker-fail-key-1')).status, 502, 'the upstream fails');
      const replayed = await call('record', { item: 'stored-before' }, 'breaker-replay-key-1');
      assert.equal(replayed.result?._meta?.['dev.gatehouse/replayed'], true, 'answered from the store: the upstream was not asked');
      assert.equal((await call('record', { item: 'fail-2' }, 'breaker-fail-key-2')).status, 502, 'the upstream fails again');
      assert.equal(await circuit('1'), '1', 'two failures of the upstream in a row, with a replay between them, open the circuit');
      const before = up.received.length;
      const refused = await call('record', { item: 'while-open' }, 'breaker-open-key-1');
      assert.equal(refused.result?.structuredContent?.error?.code, 'upstream_unavailable');
      assert.equal(up.received.length, before, 'refused at once: the upstream was not asked');
    } finally {
      up.failing = false;
    }
  });
});
