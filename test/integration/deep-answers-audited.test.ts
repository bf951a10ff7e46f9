// An upstream's answer nested too deeply for Gatehouse to write again (JSON.stringify overflows its stack;
// deep-answers.test.ts) reaches the client as the upstream's failure, GW_ERR_UPSTREAM_BAD_RESPONSE. The
// audit record, written before the answer leaves (README §Audit), must say the same: it said `ok`, for an
// answer the client never got, because the record was made before the edge found it could not write it.
// Now whether an answer Gatehouse holds as an object can be written is decided before any stage sees it,
// and the text is kept for the edge, so the check costs no second JSON.stringify. An answer relayed as the
// upstream's own bytes is written as it came (its run id inserted into the text), deep or not.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import type { AuditRecord } from '../../src/store/store.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';

const DEPTH = 20_000;
/** `{"child":{"child":…{}…}}`, written as text: JSON.stringify itself would overflow on such an object. */
const deepText = '{"child":'.repeat(DEPTH) + '{}' + '}'.repeat(DEPTH);
/** As deep, in fewer bytes (40 KB): small enough for the run id to be inserted into the upstream's text. */
const deepArrays = '['.repeat(DEPTH) + ']'.repeat(DEPTH);
/** Text enough to take an answer past the size up to which the run id is inserted into its bytes. */
const padding = 'x'.repeat(100 * 1024);

/** What each tool answers with, as the text of its result. */
const RESULTS: Record<string, string> = {
  deep: `{"content":[{"type":"text","text":"deep"}],"structuredContent":{"rows":${deepArrays}},"resultType":"complete"}`,
  // Large, and with a `_meta` of its own: the run id is merged into it, so the answer is written again.
  deep_large_meta: `{"_meta":{"mine":1},"content":[{"type":"text","text":"${padding}"}],"structuredContent":${deepText},"resultType":"complete"}`,
  shallow: '{"content":[{"type":"text","text":"fine"}],"resultType":"complete"}',
  deep_sse_lines: '{}',
};

const ups: FakeUpstream[] = [];
const gateways: TestGateway[] = [];
let single: TestGateway;
let singlePath: string;
let catalog: TestGateway;
let catalogPath: string;

async function modernUpstream(): Promise<FakeUpstream> {
  const up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method?: string; params?: { name?: string } };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const id = JSON.stringify(msg.id);
    const result = msg.method === 'tools/list'
      ? JSON.stringify({ tools: Object.keys(RESULTS).map((name) => ({ name, inputSchema: { type: 'object' } })), resultType: 'complete' })
      : RESULTS[msg.params?.name ?? ''] ?? RESULTS.shallow!;
    if (msg.params?.name === 'deep_sse_lines') {
      // The same JSON split over two data lines, which a reader joins with a line break (JSON's white space).
      const events = `id: ev-1\nevent: message\ndata: {"jsonrpc":"2.0","id":${id},\ndata: "result":{"_meta":{"mine":1},"content":[],"structuredContent":{"rows":${deepArrays}}}}\n\n`;
      return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end(events);
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(`{"jsonrpc":"2.0","id":${id},"result":${result}}`);
  }, { handshake: 'modern' });
  ups.push(up);
  return up;
}

function freshStorePath(label: string): string {
  return join(mkdtempSync(join(tmpdir(), `gatehouse-deep-audit-${label}-`)), 'gatehouse.db');
}

async function records(path: string): Promise<AuditRecord[]> {
  const store = new SqliteStore(path);
  try {
    return await store.readAudit({ limit: 1_000 });
  } finally {
    await store.close();
  }
}

/** The record of the call the client got this call id for. */
async function recordOf(path: string, callId: string): Promise<AuditRecord> {
  const found = (await records(path)).filter((r) => r.callId === callId);
  assert.equal(found.length, 1, `one record for call ${callId}`);
  return found[0]!;
}

before(async () => {
  const a = await modernUpstream();
  const b = await modernUpstream();
  singlePath = freshStorePath('single');
  single = await startGateway({ upstreams: [{ name: 'u0', url: a.url, era: 'modern' }], store: { kind: 'sqlite', path: singlePath } });
  catalogPath = freshStorePath('catalog');
  catalog = await startGateway({ upstreams: [{ name: 'u0', url: a.url, era: 'modern' }, { name: 'u1', url: b.url, era: 'modern' }], store: { kind: 'sqlite', path: catalogPath } });
  gateways.push(single, catalog);
});
after(async () => {
  for (const gw of gateways) await gw.close();
  for (const up of ups) await up.close();
});

function assertUpstreamFailure(res: { status: number; text: string; json(): any }, id: number): string {
  assert.equal(res.status, 502, res.text.slice(0, 300));
  const body = res.json();
  assert.equal(body.id, id);
  assert.equal(body.error.data.code, 'GW_ERR_UPSTREAM_BAD_RESPONSE');
  assert.match(body.error.message, /nested too deeply/);
  return body.error.data.callId as string;
}

function assertAuditedAsFailure(record: AuditRecord): void {
  assert.deepEqual([record.outcome, record.refusal, record.stage], ['failed', 'upstream_bad_response', 'upstream']);
}

test('through the catalog, a modern client: the upstream failure, audited as failed (was: audited ok, answered 502)', { timeout: 60_000 }, async () => {
  const call = modernRequest(2, 'tools/call', { name: 'u0_deep', arguments: {} });
  const callId = assertUpstreamFailure(await post(catalog.url, call.body, call.headers), 2);
  assertAuditedAsFailure(await recordOf(catalogPath, callId));
  assert.equal(catalog.logs.filter((l) => l.level === 'error').length, 0);
});

test('through the catalog, a legacy client (2025-11-25, the bridge to a modern upstream): the same', { timeout: 60_000 }, async () => {
  const session = await legacySession(catalog.url);
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  const res = await post(catalog.url, rpc(3, 'tools/call', { name: 'u1_deep', arguments: {} }), headers);
  const callId = assertUpstreamFailure(res, 3);
  assertAuditedAsFailure(await recordOf(catalogPath, callId));
});

/** The run id in an answer's text, and its record. */
async function auditedRunOf(text: string): Promise<AuditRecord | undefined> {
  const runId = /"dev\.gatehouse\/run_id":"([^"]+)"/.exec(text)?.[1];
  assert.ok(runId !== undefined, 'the run id is in the answer');
  return (await records(singlePath)).find((r) => r.runId === runId);
}

test('relayed from one upstream, large and with its own _meta (was: audited ok, answered 502): its bytes, the run id merged into that _meta, audited ok', { timeout: 60_000 }, async () => {
  const call = modernRequest(4, 'tools/call', { name: 'deep_large_meta', arguments: {} });
  const res = await post(single.url, call.body, call.headers);
  assert.equal(res.status, 200, res.text.slice(0, 300));
  assert.ok(res.text.includes(deepText), 'the deep structure reaches the client as the upstream wrote it');
  assert.match(res.text, /"_meta":\{"dev\.gatehouse\/run_id":"[^"]+","mine":1\}/);
  assert.equal((await auditedRunOf(res.text))?.outcome, 'ok');
});

test('the same answer on an SSE stream, its JSON over two data lines (was: an internal error): one event with the run id, audited ok', { timeout: 60_000 }, async () => {
  const call = modernRequest(7, 'tools/call', { name: 'deep_sse_lines', arguments: {} });
  const res = await post(single.url, call.body, { ...call.headers, accept: 'application/json, text/event-stream' });
  assert.equal(res.status, 200, res.text.slice(0, 300));
  assert.match(res.text, /^id: ev-1\nevent: message\ndata: \{/);
  const data = res.text.split('\n').filter((l) => l.startsWith('data: '));
  assert.equal(data.length, 1, 'one data line');
  assert.ok(data[0]!.includes(deepArrays));
  assert.match(data[0]!, /"_meta":\{"dev\.gatehouse\/run_id":"[^"]+","mine":1\}/);
  assert.equal((await auditedRunOf(res.text))?.outcome, 'ok');
  assert.equal(single.logs.filter((l) => l.level === 'error').length, 0, JSON.stringify(single.logs.filter((l) => l.level === 'error')).slice(0, 300));
});

test('relayed from one upstream as its own bytes (the run id inserted): passed on whole, audited ok with that run id', { timeout: 60_000 }, async () => {
  const call = modernRequest(5, 'tools/call', { name: 'deep', arguments: {} });
  const res = await post(single.url, call.body, call.headers);
  assert.equal(res.status, 200, res.text.slice(0, 300));
  assert.ok(res.text.includes(deepArrays), 'the deep structure reaches the client as the upstream wrote it');
  assert.equal((await auditedRunOf(res.text))?.outcome, 'ok');
});

test('a shallow answer through the catalog is answered and audited ok, its run id in both', async () => {
  const call = modernRequest(6, 'tools/call', { name: 'u0_shallow', arguments: {} });
  const res = await post(catalog.url, call.body, call.headers);
  assert.equal(res.status, 200, res.text);
  const body = res.json();
  assert.deepEqual(body.result.content, [{ type: 'text', text: 'fine' }]);
  const record = (await records(catalogPath)).find((r) => r.runId === body.result._meta['dev.gatehouse/run_id']);
  assert.equal(record?.outcome, 'ok');
});
