// A user confirmation asked of a legacy client on the call's own stream (README §Approvals, `by: user`), and
// what the call spent: a budget counts the calls that run, so one held back gives its spend back (README
// §Policy, budgets). The budget stage has long returned (its answer is the stream) when the user answers,
// so the approval stage gives it back itself. Until 3 December it did so only for a decline: a client that
// left at the question, and an accepted run a later stage refused (a missing idempotency key), kept the
// spend, and with a budget of one call a day the next call was refused though nothing had run. And an
// approved run given back left an `executed` audit record (written when the run was claimed), so the chain
// showed runs that never happened.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

let up: CountingUpstream;
let gw: TestGateway;
const storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-approval-giveback-')), 'gatehouse.db');

before(async () => {
  up = await startCountingUpstream('legacy');
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url }],
    store: { kind: 'sqlite', path: storePath },
    admin: { enabled: true, port: 0, token: 'admin-token-0123456789abcdef' },
    idempotency: { requireKeys: true },
    policy: {
      approvals: [{ id: 'confirm', tools: ['up/record'], by: 'user' }],
      budgets: [{ id: 'one-a-day', per: 'subject', window: 'day', limit: 1, tools: ['up/record'] }],
    },
  });
});
after(async () => {
  await gw.close();
  await up.close();
});

let sessions = 0;
/** A legacy session that declared elicitation, so the user is asked on the call's stream. */
async function session(): Promise<Record<string, string>> {
  const init = await post(gw.url, rpc(`init-${++sessions}`, 'initialize', { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'giveback', version: '1' } }));
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': init.headers['mcp-session-id'] as string, 'mcp-protocol-version': '2025-11-25' };
  await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
  return headers;
}

/**
 * Calls `record`; at the question, `onAsk` decides: leave, or answer. Returns the refusal code in the
 * answer, `ok` for a result without one, or `left`.
 */
async function callRecord(headers: Record<string, string>, id: number, item: string, onAsk: 'leave' | 'accept', meta?: Record<string, unknown>): Promise<string> {
  const controller = new AbortController();
  const res = await request(gw.url, { method: 'POST', headers, body: rpc(id, 'tools/call', { name: 'record', arguments: { item }, ...(meta ? { _meta: meta } : {}) }), signal: controller.signal });
  let seen = '';
  try {
    for await (const chunk of res.body) {
      seen += String(chunk);
      const asked = /data: (\{.*"method":"elicitation\/create".*\})/.exec(seen);
      if (asked) {
        const question = JSON.parse(asked[1]!) as { id: string };
        if (onAsk === 'leave') {
          controller.abort();
          return 'left';
        }
        seen = seen.replace(asked[0], '');
        await post(gw.url, JSON.stringify({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { confirm: true } } }), headers);
      }
    }
  } catch {
    return 'left';
  }
  return /"code":"([a-z_]+)"/.exec(seen)?.[1] ?? (/"result"/.test(seen) ? 'ok' : seen.slice(0, 200));
}

test('a client that leaves at the question spends nothing; an accepted run refused later spends nothing', async () => {
  const headers = await session();
  assert.equal(await callRecord(headers, 1, 'first', 'leave'), 'left');
  // Give the gateway a moment to see the stream close.
  await new Promise((r) => setTimeout(r, 300));
  // Accepted, then refused for want of an idempotency key: nothing ran.
  assert.equal(await callRecord(headers, 2, 'second', 'accept'), 'idempotency_key_required');
  // The day's one call is still there.
  assert.equal(await callRecord(headers, 3, 'third', 'accept', { idempotencyKey: 'giveback-key-0001' }), 'ok');
  assert.equal(up.executions.length, 1);
  assert.equal(await callRecord(headers, 4, 'fourth', 'accept', { idempotencyKey: 'giveback-key-0002' }), 'budget_exhausted');
});

test('an approved run given back leaves no executed record; the run that reached the upstream leaves one', async () => {
  const store = new SqliteStore(storePath);
  try {
    const records = await store.readAudit({ limit: 1_000 });
    const executed = records.filter((r) => r.method === 'approval' && r.outcome === 'executed');
    // Of the test above: the run refused for a missing key was given back; the third ran.
    assert.equal(executed.length, 1, JSON.stringify(executed.map((r) => r.callId)));
  } finally {
    await store.close();
  }
});
