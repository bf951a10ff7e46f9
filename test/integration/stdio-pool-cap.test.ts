// A legacy stdio server under `processes: shared` costs a child per caller and declared capability set
// (legacy capabilities are fixed per session, 2025-11-25/basic/lifecycle.mdx §Initialization; a 2026-07-28
// client sends them with every request, `io.modelcontextprotocol/clientCapabilities`). The set is the
// caller's to choose, so one caller keeps at most 8 sessions (Gatehouse's own lists 8 more) and the pool 64;
// past that an idle session is ended to make room. Until 4 December, when none was idle, a new child was
// started anyway: 30 concurrent calls from one caller, each with another set, ran 31 children, all kept
// until the idle timeout (a caller with more sets ran more, without bound). Now such a call is refused 503
// GW_ERR_SESSION_LIMIT with Retry-After; the refusal is Gatehouse's, not the upstream's failure, so it opens
// no circuit breaker, and the request line and the audit say `refused`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { hashKey } from '../../src/auth/key-hash.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren, liveStdioChildren, stdioChildPids, waitUntil } from '../helpers/stdio-children.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const ALICE = 'gh_alice_poolcap_0123456789abcdefghijklm';
const BOB = 'gh_bob_poolcap_0123456789abcdefghijklmno';
/** One caller's sessions at most (legacy-client-sessions.ts MAX_PER_OWNER). */
const PER_CALLER = 8;
const BURST = 30;
/**
 * Each call runs this long, so the burst's sessions are all busy at once. With 2 s a loaded CI machine once
 * delivered the burst's last calls after the first had ended, and those were served on the freed sessions.
 */
const RUN_MS = 5_000;

const gateways = gatewaysCheckedForLeakedChildren();

let n = 0;
function call(key: string, set: number, name = 'slow', args: Record<string, unknown> = { ms: RUN_MS }) {
  // Sets that differ inside a capability the bridge declares (sampling): `experimental` is not declared
  // upstream at all (bridge-capabilities.test.ts), so sets differing only there share one session.
  const req = modernRequest(++n, 'tools/call', { name, arguments: args, _meta: { 'io.modelcontextprotocol/clientCapabilities': { sampling: { [`set${set}`]: {} } } } });
  return post(gateways[0]!.url, req.body, { ...req.headers, authorization: `Bearer ${key}` }, AbortSignal.timeout(20_000));
}

/** The message of the last JSON-RPC message of an answer, JSON or SSE. */
function lastMessage(text: string): { result?: { content?: Array<{ text: string }> }; error?: { message: string; data?: { code?: string; retryable?: boolean } } } {
  const events = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
  return events.length > 0 ? events.at(-1) : JSON.parse(text);
}

test(`one caller's ${BURST} concurrent calls with ${BURST} capability sets run at most ${PER_CALLER} children; the rest are refused 503 GW_ERR_SESSION_LIMIT, counted as no upstream failure`, { timeout: 60_000 }, async () => {
  const storePath = join(mkdtempSync(join(tmpdir(), 'gatehouse-poolcap-')), 'gatehouse.db');
  const gw = await startGateway({
    store: { kind: 'sqlite', path: storePath },
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }, { id: 'bob', hash: hashKey(BOB), scopes: [] }] },
    upstreams: [{ name: 'fake', command: [process.execPath, FAKE], era: 'legacy', processes: 'shared' }],
    policy: { breakers: [{ id: 'fake-health', per: 'upstream', consecutiveFailures: 2, coolDownSeconds: 600 }] },
  });
  gateways.push(gw);
  // Gatehouse's own first look at the server (its era, its lists) has its child before the burst.
  const warm = await call(BOB, 0, 'echo', {});
  assert.equal(warm.status, 200, warm.text);
  const before = stdioChildPids(gw).length;

  let most = 0;
  const watch = setInterval(() => (most = Math.max(most, liveStdioChildren(gw).length)), 20);
  let answers;
  try {
    answers = await Promise.all(Array.from({ length: BURST }, (_, i) => call(ALICE, i)));
  } finally {
    clearInterval(watch);
  }
  // A name the routes do not know makes the catalog list with the caller's capabilities, in a session of
  // Gatehouse's own, which the caller's call then takes over: Gatehouse keeps at most 8 too.
  const bound = before + 2 * PER_CALLER;
  // Children of sessions ended to make room take a moment to exit; none is left running past the bound.
  assert.ok(await waitUntil(() => liveStdioChildren(gw).length <= bound, 5_000), `children running: ${liveStdioChildren(gw).length} (at most ${most} at once), at most ${bound}`);

  const served = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status !== 200);
  // Exactly 8 when the burst arrives within RUN_MS; a call that came after one had ended may take its session.
  assert.ok(served.length >= PER_CALLER && refused.length >= BURST - 2 * PER_CALLER, answers.map((a) => `${a.status} ${a.text.slice(0, 200)}`).join('\n'));
  for (const a of served) assert.equal(lastMessage(a.text).result?.content?.[0]?.text, `slow ${RUN_MS}`, a.text);
  for (const a of refused) {
    assert.equal(a.status, 503, a.text);
    assert.ok(Number(a.headers['retry-after']) >= 1, 'told when to try again');
    const error = lastMessage(a.text).error;
    assert.equal(error?.data?.code, 'GW_ERR_SESSION_LIMIT', a.text);
    assert.equal(error?.data?.retryable, true);
    assert.match(error!.message, /capability sets/);
  }
  // The refusals are Gatehouse's: the request line says refused, not upstream_error.
  const lines = gw.logs.filter((l) => l.msg === 'request' && l.status === 503);
  assert.equal(lines.length, refused.length);
  for (const l of lines) assert.deepEqual([l.outcome, l.refusal], ['refused', 'session_limit'], JSON.stringify(l));
  // The audit says so too: refused before the upstream, not failed there.
  const reader = new SqliteStore(storePath);
  try {
    const records = (await reader.readAudit({ limit: 1_000 })).filter((r) => r.refusal === 'session_limit');
    assert.equal(records.length, refused.length);
    for (const r of records) assert.deepEqual([r.outcome, r.stage, r.subject], ['refused', 'upstream', 'key:alice'], JSON.stringify(r));
  } finally {
    await reader.close();
  }

  // No circuit opened (2 upstream failures would have): alice's next call, on a session she holds, runs.
  const again = await call(ALICE, 0, 'echo', {});
  assert.equal(again.status, 200, again.text);
  assert.match(lastMessage(again.text).result?.content?.[0]?.text ?? '', /^pid \d+$/, again.text);
  // Another caller is not affected by alice's sets.
  const bob = await call(BOB, 1, 'echo', {});
  assert.equal(bob.status, 200, bob.text);
  // Once alice's sessions are idle, a new set ends her least recently used one and is served.
  const later = await call(ALICE, BURST, 'echo', {});
  assert.equal(later.status, 200, later.text);
  assert.ok(await waitUntil(() => liveStdioChildren(gw).length <= bound, 10_000), `children running: ${liveStdioChildren(gw).length}, at most ${bound}`);
});
