// gatehouse_approvals_pending (README §Metrics) is read from the store at each scrape. It must never show
// a count it no longer knows: with the approval rules removed by a reload nothing can be pending here (0),
// and with the store unreadable the count is unknown (NaN, next to gatehouse_store_up 0), where it used to
// keep the last count it read for as long as either lasted.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { validateConfigObject } from '../../src/config/load.js';
import { startCountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { startRedis } from '../helpers/redis.js';

const RULES = [{ id: 'held', tools: ['up/record'] }];
const ADMIN = { enabled: true, port: 0, token: 'admin-token-0123456789abcdef' };

async function pending(gw: TestGateway): Promise<string | undefined> {
  const text = await (await request(gw.gateway.metricsUrl!)).body.text();
  return text.match(/^gatehouse_approvals_pending (\S+)$/m)?.[1];
}

async function heldCall(gw: TestGateway, item: string): Promise<void> {
  const req = modernRequest(item, 'tools/call', { name: 'record', arguments: { item } });
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(res.json().result?.structuredContent?.error?.code, 'approval_pending', res.text);
}

test('a reload that removes the approval rules drops the gauge to 0', async () => {
  const up = await startCountingUpstream('modern');
  const store = { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-pending-gauge-')), 'gatehouse.db') };
  const raw = (policy: Record<string, unknown>) => ({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store, metrics: { enabled: true, port: 0 }, admin: ADMIN, policy });
  const gw = await startGateway(raw({ approvals: RULES }));
  try {
    await heldCall(gw, 'one');
    assert.equal(await pending(gw), '1');
    const without = validateConfigObject({ ...raw({}), auth: { anonymous: true }, listen: { host: '127.0.0.1', port: 0 }, idempotency: { requireKeys: false } }, 'test');
    assert.deepEqual(await gw.gateway.reload(without), []);
    assert.equal(await pending(gw), '0');
  } finally {
    await gw.close();
    await up.close();
  }
});

test('a store that cannot be read makes the gauge NaN, not the last count; it counts again once the store is back', async () => {
  const up = await startCountingUpstream('modern');
  const redis = await startRedis();
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'redis', url: redis.url }, metrics: { enabled: true, port: 0 }, admin: ADMIN, policy: { approvals: RULES } });
  try {
    await heldCall(gw, 'two');
    assert.equal(await pending(gw), '1');
    await redis.stop();
    // prom-client writes NaN as `Nan`, which Prometheus reads (Go's ParseFloat takes any case).
    assert.match(String(await pending(gw)), /^nan$/i);
    await redis.start();
    const until = Date.now() + 15_000;
    let seen = await pending(gw);
    while (seen !== '1' && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 200));
      seen = await pending(gw);
    }
    assert.equal(seen, '1');
  } finally {
    await gw.close();
    await redis.stop().catch(() => {});
    await up.close();
  }
});
