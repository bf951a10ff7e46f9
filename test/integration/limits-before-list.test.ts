// A tool called before the catalog could list it (at start, or while its upstream's tools/list fails) goes
// to the one upstream on the pass-through as a name no list gave. Rate limits and budgets `per: tool` count
// such names together (`unlisted:<upstream>`, limits-unlisted-names.test.ts), so until 3 December the same
// tool spent from two counters, the shared one before its list and its own after: a budget of 2 ran it 4
// times. An entry that names the tool written out now counts it by its ref either way. Found by the edge
// fuzzer's governed gateway (property 17), whose budget on `echo` ran 12 calls in a minute of 6.

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
let gw: TestGateway;
let storePath: string;
let listFails = true;
let ran = 0;

before(async () => {
  up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.method === 'initialize') return jsonResult(res, body, { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'late-list', version: '1' } });
    if (msg.method === 'tools/list') {
      if (listFails) return void res.writeHead(500, { 'content-type': 'text/plain' }).end('not yet');
      return jsonResult(res, body, { tools: [{ name: 'real', inputSchema: { type: 'object' } }] });
    }
    if (msg.id === undefined) return void res.writeHead(202).end();
    ran++;
    jsonResult(res, body, { content: [{ type: 'text', text: 'ok' }] });
  });
  storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-before-list-')), 'gatehouse.db');
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'legacy' }],
    store: { kind: 'sqlite', path: storePath },
    policy: {
      budgets: [{ id: 'real-daily', per: 'tool', tools: ['up/real'], window: 'day', limit: 2 }],
      rateLimits: [{ id: 'real-rate', per: 'tool', tools: ['up/real'], rate: 3, perSeconds: 3600, burst: 3 }],
    },
  });
});
after(async () => {
  await gw.close();
  await up.close();
});

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
let n = 0;
async function call(name: string): Promise<string | undefined> {
  const res = await post(gw.url, JSON.stringify({ jsonrpc: '2.0', id: ++n, method: 'tools/call', params: { name, arguments: {} } }), HEADERS);
  assert.equal(res.status, 200, res.text);
  const result = res.json().result;
  return result?.isError === true ? result.structuredContent?.error?.code : 'ok';
}

test('a tool named by a per-tool budget spends one counter before and after its list', async () => {
  assert.equal(await call('real'), 'ok', 'unlisted, passed on');
  listFails = false;
  // The catalog lists again for an unknown name at most once a second.
  await new Promise((r) => setTimeout(r, 1_100));
  assert.equal(await call('real'), 'ok', 'listed now');
  assert.equal(await call('real'), 'budget_exhausted');
  assert.equal(ran, 2);
  const store = new SqliteStore(storePath);
  try {
    assert.deepEqual((await store.listBudgets('budget:')).map((c) => [c.key, c.used]), [['budget:real-daily:tool:up/real', 2]]);
  } finally {
    await store.close();
  }
});

test('made-up names still share one count, apart from the tool the entry names', async () => {
  // The budget names only up/real; a made-up name falls under no entry's exact name, and no budget.
  assert.equal(await call('invented'), 'ok');
  // The rate limit's bucket for up/real took 3 tokens above (two runs and the refused third): empty.
  assert.equal(await call('real'), 'rate_limited');
});
