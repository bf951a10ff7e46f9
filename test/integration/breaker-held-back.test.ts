// Circuit breakers and calls that never reach the upstream. A breaker judges the upstream's health by what
// the upstream answered (README, Policy: "Failures are the upstream's"); an answer Gatehouse gives without
// asking the upstream says nothing of it. An idempotency replay is such an answer: the stored result of an
// earlier run (README, Idempotent writes: "the stored answer ...; nothing runs"). Until 4 December the
// breaker counted a replay as the upstream succeeding: replays between failures reset the consecutive
// count, so an upstream that failed every call it was sent never had its circuit opened.
//
// The same holds for the half-open probe (README: "open for coolDownSeconds, then one probe call decides"):
// a probe that a later stage held back (an idempotency refusal, a replay, an approval pending) decides
// nothing, and until 4 December it kept every other call refused for one more whole cool-down, though the
// upstream had not been asked. Now it gives its turn back, and the next call probes.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import type { CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGatewayOverCountingUpstream } from '../helpers/counting-gateway.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';

let up: CountingUpstream;
let gw: TestGateway;
before(async () => {
  ({ up, gw } = await startGatewayOverCountingUpstream({
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }] },
    metrics: { enabled: true, port: 0 },
    idempotency: { requireKeys: true },
    // A long cool-down: nothing here waits for it, so no step depends on how fast the machine is.
    policy: { breakers: [{ id: 'health', per: 'upstream', consecutiveFailures: 2, coolDownSeconds: 600 }] },
  }));
});
after(async () => {
  await gw.close();
  await up.close();
});

let n = 0;
async function call(name: string, args: Record<string, unknown>, key: string | undefined, url = gw.url) {
  const req = modernRequest(++n, 'tools/call', { name, arguments: args, ...(key !== undefined ? { _meta: { idempotencyKey: key } } : {}) });
  const res = await post(url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}` });
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

describe('a half-open probe that never reached the upstream', () => {
  let quick: TestGateway;
  before(async () => {
    quick = await startGateway({
      upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
      auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }] },
      idempotency: { requireKeys: true },
      policy: { breakers: [{ id: 'quick', per: 'upstream', consecutiveFailures: 1, coolDownSeconds: 1 }] },
    });
  });
  after(async () => {
    await quick.close();
  });

  /** Opens the circuit with one failure, then waits out its cool-down. */
  async function openThenCoolDown(item: string): Promise<void> {
    up.failing = true;
    try {
      assert.equal((await call('record', { item }, `${item}-key`, quick.url)).status, 502);
    } finally {
      up.failing = false;
    }
    // The failure is recorded on the side: wait until the circuit refuses, then for its cool-down.
    for (let i = 0; i < 40; i++) {
      const r = await call('lookup', { item: `${item}-check-${i}` }, undefined, quick.url);
      if (r.result?.structuredContent?.error?.code === 'upstream_unavailable') break;
      await new Promise((res) => setTimeout(res, 50));
    }
    await new Promise((r) => setTimeout(r, 1_100));
  }

  test('held back by an idempotency refusal, or answered by a replay: the next call is the probe', async () => {
    const stored = await call('record', { item: 'probe-stored' }, 'probe-replay-key-1', quick.url);
    assert.equal(stored.result?.isError, undefined);

    await openThenCoolDown('probe-open-1');
    const refused = await call('record', { item: 'probe-no-key' }, undefined, quick.url);
    assert.equal(refused.result?.structuredContent?.error?.code, 'idempotency_key_required', 'the first call after the cool-down is held back');
    const next = await call('record', { item: 'probe-after-refusal' }, 'probe-after-refusal-key', quick.url);
    assert.equal(next.result?.structuredContent?.error?.code, undefined, `the next call probes the upstream: ${JSON.stringify(next.result)}`);
    assert.equal(up.timesExecuted('probe-after-refusal-key'), 1);

    await openThenCoolDown('probe-open-2');
    const replayed = await call('record', { item: 'probe-stored' }, 'probe-replay-key-1', quick.url);
    assert.equal(replayed.result?._meta?.['dev.gatehouse/replayed'], true, 'the first call after the cool-down is a replay');
    const after = await call('record', { item: 'probe-after-replay' }, 'probe-after-replay-key', quick.url);
    assert.equal(after.result?.structuredContent?.error?.code, undefined, `the next call probes the upstream: ${JSON.stringify(after.result)}`);
    assert.equal(up.timesExecuted('probe-after-replay-key'), 1);
  });
});
