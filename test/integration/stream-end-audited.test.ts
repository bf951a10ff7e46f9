// A governed call answered through a call stream (the era bridges, the catalog) that ends without an answer
// is still recorded, and lets go of what its stages held. Two ways it ends so: a legacy client's
// notifications/cancelled (2025-11-25 utilities/cancellation.mdx: no response is sent for it; the bridge
// ends the exchange empty), and a modern client hanging up mid-answer (2026-07-28 cancellation.mdx
// §Transport-Specific Cancellation: closing the stream is the cancellation). Until 3 December neither got an
// audit record (README §Audit: every tools/call gets one; a client that left is `aborted`, `client_closed`),
// and an idempotency key's lease was renewed for ever, so a retry waited out its whole wait before
// hearing `outcome_unknown`.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';
import { waitUntil } from '../helpers/stdio-children.js';

let a: CountingUpstream;
let b: CountingUpstream;
let bridged: TestGateway;
let catalog: TestGateway;
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-stream-end-'));

before(async () => {
  a = await startCountingUpstream('modern');
  b = await startCountingUpstream('modern');
  // A modern upstream: a legacy client is bridged, its calls answered through a call stream.
  bridged = await startGateway({ store: { kind: 'sqlite', path: join(dir, 'bridged.db') }, upstreams: [{ name: 'up', url: a.url, era: 'modern', timeouts: { headersMs: 60_000 } }], idempotency: { requireKeys: true } });
  // Two upstreams: every call goes through the catalog.
  catalog = await startGateway({ store: { kind: 'sqlite', path: join(dir, 'catalog.db') }, upstreams: [{ name: 'a', url: a.url, era: 'modern' }, { name: 'b', url: b.url, era: 'modern' }], idempotency: { requireKeys: true } });
});
after(async () => {
  await bridged?.close();
  await catalog?.close();
  await a?.close();
  await b?.close();
});

async function records(file: string) {
  const store = new SqliteStore(join(dir, file));
  try {
    return (await store.readAudit({ limit: 1_000 })).filter((r) => r.method === 'tools/call');
  } finally {
    await store.close();
  }
}

type AuditRecord = Awaited<ReturnType<typeof records>>[number];

/** The record `which` finds, once written (the answer may leave before a test reads the file). */
async function recordOf(file: string, which: (r: AuditRecord) => boolean): Promise<AuditRecord> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const found = (await records(file)).find(which);
    if (found !== undefined) return found;
    if (Date.now() > deadline) assert.fail(`no audit record in ${file}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a legacy client cancels a bridged write: audited aborted, and a retry under its key hears outcome_unknown at once', async () => {
  const sid = await legacySession(bridged.url);
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  const key = `cancelled-${Date.now()}`;
  const call = (id: number) => rpc(id, 'tools/call', { name: 'record_slowly', arguments: { item: 'c', ms: 800 }, _meta: { idempotencyKey: key } });
  const first = post(bridged.url, call(1), headers);
  await waitUntil(() => a.received.some((r) => r.includes(key)), 5_000);
  const cancelled = await post(bridged.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'user' } }), headers);
  assert.equal(cancelled.status, 202);
  const answered = await first;
  assert.doesNotMatch(answered.text, /"result"|"error"/, 'no response for a cancelled request');
  const callId = answered.headers['x-gatehouse-call-id'] as string;
  const record = await recordOf('bridged.db', (r) => r.callId === callId);
  assert.equal(record.outcome, 'aborted');
  assert.equal(record.refusal, 'client_closed');
  assert.equal(record.idempotencyKey, key);
  // The key is not held by a call that ended: the retry is told at once. A key still held makes it wait out
  // the call's whole limit (headersMs, 60 s here) before the same outcome_unknown; the 20 s bound tells the
  // two apart with room for a loaded machine.
  const retry = await post(bridged.url, call(2), headers, AbortSignal.timeout(20_000)).catch((err: Error) => err);
  assert.ok(!(retry instanceof Error), `the retry waited for the ended call's key: ${String(retry)}`);
  assert.match(retry.text, /outcome_unknown/);
});

test('a modern client hangs up on a call through the catalog: audited aborted, client_closed', async () => {
  const key = `left-${Date.now()}`;
  const m = modernRequest(7, 'tools/call', { name: 'a_record_slowly', arguments: { item: 'l', ms: 1_500 }, _meta: { idempotencyKey: key } });
  const controller = new AbortController();
  // Left before the answer's headers: the call is still running upstream.
  const res = request(catalog.url, { method: 'POST', headers: m.headers, body: m.body, signal: controller.signal }).catch(() => undefined);
  await waitUntil(() => a.received.some((r) => r.includes(key)), 5_000);
  controller.abort();
  await res;
  const record = await recordOf('catalog.db', (r) => r.idempotencyKey === key);
  assert.equal(record.outcome, 'aborted');
  assert.equal(record.refusal, 'client_closed');
});
