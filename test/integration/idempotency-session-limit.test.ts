// A write refused by Gatehouse itself before anything went upstream leaves its idempotency key free, so
// the retry runs (README, Idempotent writes: "refused by Gatehouse after the key was taken, before anything
// went up ... the refusal; nothing is stored, and the retry runs"). One such refusal is the session limit:
// a 2026-07-28 caller of a legacy stdio server may hold 8 sessions (one per capability set), and a call
// that would need a ninth while all 8 are busy is refused 503 GW_ERR_SESSION_LIMIT, "retry after
// Retry-After". Until 4 December that refusal kept the key taken, as a call that may have run: the retry,
// with the same key as it must be, was answered outcome_unknown ("it may have taken effect") for the key's
// whole lifetime (24 h), though nothing had been sent, and the write could not be made under its key.
// Likewise the budget it spent (README, Policy: "A budget counts the calls that run") was kept: refused
// calls used up a budget the caller then lacked for the retries.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { hashKey } from '../../src/auth/key-hash.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const ALICE = 'gh_alice_idemcap_0123456789abcdefghijklm';
/** One caller's sessions at most (legacy-client-sessions.ts MAX_PER_OWNER), and two more calls. */
const BURST = 10;
const RUN_MS = 3_000;

/** Each test its gateway; calls go to the last one started. */
const gateways = gatewaysCheckedForLeakedChildren();

let n = 0;
function call(set: number, key: string | undefined, ms: number) {
  const req = modernRequest(++n, 'tools/call', { name: 'slow', arguments: { ms }, _meta: { ...(key !== undefined ? { idempotencyKey: key } : {}), 'io.modelcontextprotocol/clientCapabilities': { sampling: { [`set${set}`]: {} } } } });
  return post(gateways.at(-1)!.url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}` }, AbortSignal.timeout(20_000));
}

/** The last JSON-RPC message of an answer, JSON or SSE. */
function lastMessage(text: string): { result?: { content?: Array<{ text: string }>; _meta?: Record<string, unknown> }; error?: { message: string; data?: { code?: string } } } {
  const events = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
  return events.length > 0 ? events.at(-1) : JSON.parse(text);
}

test('a write refused 503 GW_ERR_SESSION_LIMIT stores nothing: its retry with the same key runs', { timeout: 60_000 }, async () => {
  const gw = await startGateway({
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }] },
    upstreams: [{ name: 'fake', command: [process.execPath, FAKE], era: 'legacy', processes: 'shared' }],
    idempotency: { requireKeys: true, tools: ['fake/slow'] },
  });
  gateways.push(gw);
  const keys = Array.from({ length: BURST }, (_, i) => `session-cap-key-${i}-${Date.now()}`);
  const answers = await Promise.all(keys.map((key, i) => call(i, key, RUN_MS)));
  const refused = answers.flatMap((a, i) => (a.status === 503 ? [i] : []));
  assert.ok(refused.length > 0, answers.map((a) => `${a.status} ${a.text.slice(0, 160)}`).join('\n'));
  for (const i of refused) assert.equal(lastMessage(answers[i]!.text).error?.data?.code, 'GW_ERR_SESSION_LIMIT', answers[i]!.text);

  // The others are done, so their sessions are idle: the retries are served, each running its write.
  for (const i of refused) {
    const retry = await call(i, keys[i]!, RUN_MS);
    const message = lastMessage(retry.text);
    assert.equal(retry.status, 200, retry.text);
    assert.equal(message.result?.content?.[0]?.text, `slow ${RUN_MS}`, `the retry ran: ${retry.text}`);
    assert.equal(message.result?._meta?.['dev.gatehouse/replayed'], undefined, 'not a replay of the refusal');
  }
});

test('a call refused 503 GW_ERR_SESSION_LIMIT spends no budget: the retries fit the budget the served calls left', { timeout: 60_000 }, async () => {
  const gw = await startGateway({
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }] },
    upstreams: [{ name: 'fake', command: [process.execPath, FAKE], era: 'legacy', processes: 'shared' }],
    policy: { budgets: [{ id: 'slow-calls', per: 'subject', tools: ['fake/slow'], window: 'month', limit: BURST }] },
  });
  gateways.push(gw);
  const answers = await Promise.all(Array.from({ length: BURST }, (_, i) => call(i, undefined, RUN_MS)));
  const refused = answers.flatMap((a, i) => (a.status === 503 ? [i] : []));
  assert.ok(refused.length > 0, answers.map((a) => `${a.status} ${a.text.slice(0, 160)}`).join('\n'));
  for (const i of refused) {
    const retry = await call(i, undefined, 1);
    assert.equal(lastMessage(retry.text).result?.content?.[0]?.text, 'slow 1', `the retry ran within the budget: ${retry.text}`);
  }
  const over = lastMessage((await call(0, undefined, 1)).text);
  assert.equal((over.result as { structuredContent?: { error?: { code?: string } } } | undefined)?.structuredContent?.error?.code, 'budget_exhausted', 'the calls that ran spent it all');
});
