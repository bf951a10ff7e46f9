// A client that leaves its governed call mid-answer (modern HTTP: closing the stream is the cancellation,
// 2026-07-28/basic/patterns/cancellation.mdx §Transport-Specific Cancellation) ends that call, but says
// nothing about the upstream: the call is audited as `aborted` (`client_closed`), and a circuit breaker does
// not count it as the upstream failing. Before, both took the broken relay for an unreachable upstream, so
// a few clients pressing "stop" could open the circuit for everyone.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startFakeUpstream, jsonResult, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { readSseUntil } from '../helpers/sse.js';

let up: FakeUpstream;
let gw: TestGateway;
let storePath: string;
let closedByGateway = 0;

before(async () => {
  up = await startFakeUpstream(
    (_req, res, body) => {
      const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string; _meta?: { progressToken?: unknown } } };
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [{ name: 'slow', inputSchema: { type: 'object' } }, { name: 'quick', inputSchema: { type: 'object' } }], resultType: 'complete', ttlMs: 0, cacheScope: 'public' });
      if (msg.method !== 'tools/call') return jsonResult(res, body, { resultType: 'complete' });
      if (msg.params?.name === 'quick') return jsonResult(res, body, { content: [{ type: 'text', text: 'done' }], resultType: 'complete' });
      // `slow`: progress every 100 ms, an answer after 3 s (if anyone is still there).
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const timer = setInterval(() => {
        if (++n < 30) res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: msg.params?._meta?.progressToken, progress: n } })}\n\n`);
        else res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'slow done' }], resultType: 'complete' } })}\n\n`);
      }, 100);
      res.on('close', () => {
        clearInterval(timer);
        if (n < 30) closedByGateway++;
      });
    },
    { handshake: 'modern' },
  );
  storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-client-abort-')), 'gatehouse.db');
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    store: { kind: 'sqlite', path: storePath },
    policy: { breakers: [{ id: 'up-health', per: 'upstream', consecutiveFailures: 1, coolDownSeconds: 600 }] },
  });
});
after(async () => {
  await gw?.close();
  await up?.close();
});

/** Starts `slow`, reads its first progress, then leaves. */
async function startAndLeave(id: number): Promise<void> {
  const m = modernRequest(id, 'tools/call', { name: 'slow', arguments: {}, _meta: { progressToken: `t${id}` } });
  const controller = new AbortController();
  const res = await request(gw.url, { method: 'POST', headers: m.headers, body: m.body, signal: controller.signal });
  if (!String(res.headers['content-type']).startsWith('text/event-stream')) assert.fail(`call ${id} did not run: ${await res.body.text()}`);
  const seen = await readSseUntil(res.body, (ms) => ms.some((x) => x.method === 'notifications/progress'), 3_000);
  assert.ok(seen.length > 0, 'the call was under way');
  controller.abort();
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 3_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function auditOf(callIds: Set<string> | undefined = undefined) {
  const store = new SqliteStore(storePath);
  try {
    const all = await store.readAudit({ limit: 1_000 });
    return callIds === undefined ? all : all.filter((r) => callIds.has(r.callId));
  } finally {
    await store.close();
  }
}

test('clients that leave mid-answer neither open the circuit nor are audited as an upstream failure', async () => {
  await startAndLeave(1);
  await waitFor('the upstream request closed', () => closedByGateway === 1);
  await startAndLeave(2);
  await waitFor('the upstream request closed', () => closedByGateway === 2);
  // Audited as what happened: the client left.
  await waitFor('two records', async () => (await auditOf()).filter((r) => r.tool === 'slow').length === 2);
  for (const r of (await auditOf()).filter((x) => x.tool === 'slow')) {
    assert.equal(r.outcome, 'aborted', JSON.stringify(r));
    assert.equal(r.refusal, 'client_closed');
  }
  // With a breaker that opens on one failure, the next call still runs.
  const m = modernRequest(3, 'tools/call', { name: 'quick', arguments: {} });
  const res = await post(gw.url, m.body, m.headers);
  assert.equal(res.json().result?.structuredContent?.error?.code, undefined, res.text);
  assert.equal(res.json().result.content[0].text, 'done');
});
