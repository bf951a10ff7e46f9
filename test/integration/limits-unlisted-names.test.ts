// Rate limits and budgets `per: tool`, and tool names no list gave. One upstream served by pass-through
// answers such names itself (docs/lifecycle.md), so they reach the policy stages with a ref made of the
// caller's own words. Counted per name, each made-up name was a fresh bucket and budget counter: a caller
// evaded a per-tool limit by renaming, and left a store row per name. Now all such names of one upstream
// share one count (`unlisted:<upstream>`); listed tools keep their own (the breakers' rule of
// breaker-unlisted-names.test.ts).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { post } from '../helpers/http.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';

let up: FakeUpstream;
let rateGw: TestGateway;
let budgetGw: TestGateway;
let budgetStore: string;

before(async () => {
  up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'names-fake', version: '1' } });
    if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [{ name: 'real', inputSchema: { type: 'object' } }] });
    if (msg.id === undefined) return void res.writeHead(202).end();
    jsonResult(res, body, { content: [{ type: 'text', text: 'ok' }] });
  });
  const upstreams = [{ name: 'up', url: up.url, era: 'legacy' }];
  rateGw = await startGateway({ upstreams, policy: { rateLimits: [{ id: 'each-tool', per: 'tool', rate: 2, perSeconds: 3600, burst: 2 }] } });
  budgetStore = join(mkdtempSync(join(tmpdir(), 'gatehouse-unlisted-budget-')), 'gatehouse.db');
  budgetGw = await startGateway({ upstreams, store: { kind: 'sqlite', path: budgetStore }, policy: { budgets: [{ id: 'each-tool', per: 'tool', window: 'day', limit: 3 }] } });
});
after(async () => {
  await rateGw.close();
  await budgetGw.close();
  await up.close();
});

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
let n = 0;
async function call(gw: TestGateway, name: string): Promise<{ ok: boolean; code?: string; rule?: string }> {
  const res = await post(gw.url, JSON.stringify({ jsonrpc: '2.0', id: ++n, method: 'tools/call', params: { name, arguments: {} } }), HEADERS);
  assert.equal(res.status, 200, res.text);
  const result = res.json().result;
  return result?.isError === true ? { ok: false, code: result.structuredContent?.error?.code, rule: result.structuredContent?.error?.rule } : { ok: true };
}

test('a rate limit per tool: made-up names share one bucket, so renaming does not evade it; a listed tool keeps its own', async () => {
  assert.deepEqual(await call(rateGw, 'real'), { ok: true });
  assert.deepEqual(await call(rateGw, 'made_up_1'), { ok: true });
  assert.deepEqual(await call(rateGw, 'made_up_2'), { ok: true });
  // A third name, the same bucket, now empty (burst 2).
  assert.deepEqual(await call(rateGw, 'made_up_3'), { ok: false, code: 'rate_limited', rule: 'each-tool' });
  assert.deepEqual(await call(rateGw, 'real'), { ok: true }, "the listed tool's bucket is its own");
});

test('a budget per tool: made-up names spend one counter, and leave one store row, not one per name', async () => {
  for (let i = 0; i < 3; i++) assert.deepEqual(await call(budgetGw, `invented_${i}`), { ok: true });
  const refused = await call(budgetGw, 'invented_3');
  assert.deepEqual(refused, { ok: false, code: 'budget_exhausted', rule: 'each-tool' });
  assert.deepEqual(await call(budgetGw, 'real'), { ok: true });
  const store = new SqliteStore(budgetStore);
  try {
    const counters = (await store.listBudgets('budget:')).map((c) => [c.key, c.used]).sort();
    assert.deepEqual(counters, [['budget:each-tool:tool:unlisted:up', 3], ['budget:each-tool:tool:up/real', 1]]);
  } finally {
    await store.close();
  }
});
