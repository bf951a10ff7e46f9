// Redis as the shared store (issue 12 items 1 and 4, and its "Shown by"): with Redis stopped mid-run every
// governed call is refused with 503 GW_ERR_STATE_UNAVAILABLE and nothing executes upstream; /readyz says
// not ready and a metric counts the failures; when Redis is back, calls succeed again without a restart.
// Two Gatehouse processes on one Redis share idempotency keys (a key used on one replays on the other,
// and concurrent duplicates across them run once) and one audit chain.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { verifyChain } from '../../src/store/audit-chain.js';
import { openStore } from '../../src/store/open-store.js';
import { serveCli, type ServingCli } from '../helpers/cli.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { countingUpstreamAndRedis } from '../helpers/upstream-and-redis.js';
import { readyz, untilServed } from '../helpers/store-outage.js';

const fixture = countingUpstreamAndRedis();

let n = 0;

async function call(url: string, name: string, item: string, key?: string, more: Record<string, unknown> = {}) {
  const req = modernRequest(++n, 'tools/call', { name, arguments: { item, ...more }, ...(key ? { _meta: { idempotencyKey: key } } : {}) });
  return post(url, req.body, req.headers);
}

describe('Redis stopped mid-run', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ upstreams: [{ name: 'up', url: fixture.up.url, era: 'modern' }], store: { kind: 'redis', url: fixture.redis.url, keyPrefix: 'stopped:', commandTimeoutMs: 500 }, idempotency: { requireKeys: true }, metrics: { enabled: true, port: 0 } });
  });
  after(() => gw.close());

  test('calls are refused with 503 and nothing executes; /readyz and the metrics say so; back without a restart', { timeout: 60_000 }, async () => {
    const ok = await call(gw.url, 'record', 'before-outage', 'stopped-key-0001');
    assert.equal(ok.status, 200);
    assert.match(ok.json().result.content[0].text, /^recorded before-outage/);
    assert.equal((await readyz(gw)).status, 200);

    await fixture.redis.stop();
    const executedBefore = fixture.up.executions.length;
    const refusals = [];
    for (let i = 0; i < 5; i++) refusals.push(await call(gw.url, i % 2 ? 'lookup' : 'record', `during-outage-${i}`, `stopped-key-1${i}00`));
    for (const r of refusals) {
      assert.equal(r.status, 503, r.text);
      assert.equal(r.json().error.data.code, 'GW_ERR_STATE_UNAVAILABLE', r.text);
      assert.equal(r.headers['retry-after'], '1');
    }
    assert.equal(fixture.up.executions.length, executedBefore, 'nothing ran upstream while the store was down');
    const notReady = await readyz(gw);
    assert.equal(notReady.status, 503);
    assert.deepEqual(notReady.body.store, { kind: 'redis', up: false });
    const metrics = await (await request(gw.gateway.metricsUrl!)).body.text();
    assert.match(metrics, /^gatehouse_store_up 0$/m);
    const errors = Number(/^gatehouse_store_errors_total (\d+)$/m.exec(metrics)?.[1]);
    assert.ok(errors >= 1, `store errors counted: ${errors}`);

    await fixture.redis.start();
    // Service resumes on its own: bounded wait for the probe to see Redis again.
    const back = await untilServed(() => call(gw.url, 'record', 'after-outage', 'stopped-key-2000'), 100);
    assert.equal(back.status, 200, back.text);
    assert.match(back.json().result.content[0].text, /^recorded after-outage/);
    assert.equal((await readyz(gw)).status, 200);
    assert.match(await (await request(gw.gateway.metricsUrl!)).body.text(), /^gatehouse_store_up 1$/m);
    // What was stored before the outage is still there (Redis keeps its append-only file).
    const replay = await call(gw.url, 'record', 'before-outage', 'stopped-key-0001');
    assert.equal(replay.json().result._meta['dev.gatehouse/replayed'], true);
    assert.equal(fixture.up.timesExecuted('stopped-key-0001'), 1);
  });
});

describe('two Gatehouse processes on one Redis', () => {
  // Two real processes (the built CLI), each with its own Redis connection and its own idempotency owner id.
  let a: ServingCli;
  let b: ServingCli;
  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-replicas-'));
    const file = join(dir, 'gatehouse.yaml');
    writeFileSync(file, JSON.stringify({ listen: { host: '127.0.0.1', port: 0 }, auth: { anonymous: true }, upstreams: [{ name: 'up', url: fixture.up.url, era: 'modern' }], store: { kind: 'redis', url: fixture.redis.url, keyPrefix: 'replicas:' }, idempotency: { requireKeys: true }, policy: { rateLimits: [{ id: 'shared-lookups', per: 'subject', tools: ['up/lookup'], rate: 5, perSeconds: 600, burst: 5 }], budgets: [{ id: 'shared-budget', per: 'tool', tools: ['up/record_fails'], window: 'month', limit: 3 }], breakers: [{ id: 'shared-breaker', per: 'tool', tools: ['up/record_slowly'], consecutiveFailures: 2, coolDownSeconds: 30 }] } }));
    [a, b] = await Promise.all([serveCli(['--config', file], { configStore: true }), serveCli(['--config', file], { configStore: true })]);
    assert.notEqual(a.child.pid, b.child.pid);
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
  });

  test('a key used on one replays on the other', async () => {
    const first = await call(a.url, 'record', 'replica-item', 'replica-key-0001');
    const second = await call(b.url, 'record', 'replica-item', 'replica-key-0001');
    assert.equal(second.json().result.content[0].text, first.json().result.content[0].text);
    assert.equal(second.json().result._meta['dev.gatehouse/replayed'], true);
    assert.equal(fixture.up.timesExecuted('replica-key-0001'), 1);
    const conflict = await call(b.url, 'record', 'another-item', 'replica-key-0001');
    assert.equal(conflict.json().result.structuredContent.error.code, 'idempotency_key_conflict');
  });

  test('concurrent duplicates spread over both run once; every caller gets the one answer', async () => {
    const req = (url: string) => {
      const r = modernRequest(++n, 'tools/call', { name: 'record_slowly', arguments: { item: 'replica-slow', ms: 500 }, _meta: { idempotencyKey: 'replica-key-0002' } });
      return post(url, r.body, r.headers);
    };
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => req(i % 2 ? a.url : b.url)));
    assert.equal(fixture.up.timesExecuted('replica-key-0002'), 1);
    assert.equal(new Set(answers.map((r) => r.json().result.content[0].text)).size, 1, answers.map((r) => r.text).join('\n'));
  });

  test('a rate limit of N admits exactly N calls across both processes', async () => {
    const answers = await Promise.all(Array.from({ length: 15 }, (_, i) => call(i % 2 ? a.url : b.url, 'lookup', `limited-${i}`)));
    const codes = answers.map((r) => r.json().result.structuredContent?.error?.code ?? 'ok');
    assert.equal(codes.filter((c) => c === 'ok').length, 5, codes.join(' '));
    assert.equal(codes.filter((c) => c === 'rate_limited').length, 10);
  });

  test('a budget is spent once across both processes', async () => {
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => call(i % 2 ? a.url : b.url, 'record_fails', `budgeted-${i}`, `budget-key-${String(i).padStart(4, '0')}`)));
    const codes = answers.map((r) => r.json().result.structuredContent?.error?.code ?? 'ran');
    assert.equal(codes.filter((c) => c === 'ran').length, 3, codes.join(' '));
    assert.equal(codes.filter((c) => c === 'budget_exhausted').length, 5);
  });

  test('a circuit opened by failures seen on one process is open on the other', async () => {
    fixture.up.failing = true;
    try {
      for (let i = 0; i < 2; i++) assert.equal((await call(a.url, 'record_slowly', `tripping-${i}`, `trip-key-${String(i).padStart(4, '0')}`, { ms: 1 })).status, 502);
      const elsewhere = await call(b.url, 'record_slowly', 'elsewhere', 'trip-key-0009', { ms: 1 });
      assert.equal(elsewhere.json().result.structuredContent.error.code, 'upstream_unavailable', elsewhere.text);
      assert.equal(fixture.up.received.filter((body) => body.includes('"elsewhere"')).length, 0);
    } finally {
      fixture.up.failing = false;
    }
  });

  test('both write one audit chain, which verifies', async () => {
    await Promise.all(Array.from({ length: 20 }, (_, i) => call(i % 2 ? a.url : b.url, 'lookup', `chain-${i}`)));
    const reader = openStore({ kind: 'redis', url: fixture.redis.url, keyPrefix: 'replicas:', commandTimeoutMs: 2_000 });
    try {
      const records = await reader.readAudit({ limit: 10_000 });
      assert.ok(records.length >= 20 + 10 + 3, `${records.length} records`);
      assert.equal(verifyChain(records, await reader.auditAnchor()).ok, true);
    } finally {
      await reader.close();
    }
  });
});
