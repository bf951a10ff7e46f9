// A requestState is the upstream's, sealed by Gatehouse to the modern caller it was given to
// (2026-07-28/basic/patterns/mrtr.mdx §Server Requirements 4–5, §Security Considerations: requestState is
// attacker-controlled; GATEWAY-REQUIREMENTS.md: state handle hijacking). The seal is opened only on modern
// requests, and it wraps the upstream's string in the clear, so whoever sees a sealed state holds the
// upstream's own. A legacy (2025-11-25) client knows no requestState: Gatehouse's legacy→modern bridge runs
// the input rounds itself. A requestState or inputResponses such a client puts in its params is none of
// Gatehouse's, and must not reach the upstream: there it would be taken as the upstream's state, which
// cannot tell one caller from another behind Gatehouse.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { STATE_PREFIX, type ModernServer } from '../fixtures/upstreams/modern-server.js';
import { ALICE, BOB, startModernForAliceAndBob } from '../helpers/alice-and-bob.js';
import type { TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';

const ANSWER = { who: { action: 'accept', content: { name: 'Mallory' } } };

let upstream: ModernServer;
let gw: TestGateway;

before(async () => {
  ({ upstream, gw } = await startModernForAliceAndBob());
});

after(async () => {
  await gw?.close();
  await upstream?.close();
});

/** The requestState values of the tools/call requests that reached the upstream after `from`. */
const statesSentUp = (from: number): unknown[] =>
  upstream.requests
    .slice(from)
    .map((r) => r.body as { method?: unknown; params?: { requestState?: unknown } } | undefined)
    .filter((b) => b?.method === 'tools/call')
    .map((b) => b?.params?.requestState)
    .filter((s) => s !== undefined);

test("a legacy client's own requestState never reaches a modern upstream: another caller's state cannot be replayed through the bridge", async () => {
  // Alice, a modern client, is asked for input; her state is sealed to her, the upstream's inside in the clear.
  const m = modernRequest(1, 'tools/call', { name: 'ask-with-state', arguments: { topic: 'alice-secret' }, _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } } });
  const asked = (await post(gw.url, m.body, { ...m.headers, authorization: `Bearer ${ALICE}` })).json().result;
  assert.equal(asked.resultType, 'input_required', JSON.stringify(asked));
  const sealed = asked.requestState as string;
  const inner = sealed.slice(sealed.indexOf('.', sealed.indexOf('.', 4) + 1) + 1);
  assert.equal(inner, `${STATE_PREFIX}alice-secret`, 'the upstream state travels inside the seal');

  // Bob, on a legacy session, presents Alice's upstream state (and answers of his choosing) as params.
  const headers = { ...LEGACY_HEADERS, authorization: `Bearer ${BOB}` };
  const session = await legacySession(gw.url, { authorization: `Bearer ${BOB}` });
  const legacy = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), legacy);
  const before = upstream.requests.length;
  const res = await post(gw.url, rpc(2, 'tools/call', { name: 'ask-with-state', arguments: { topic: 'alice-secret' }, requestState: inner, inputResponses: ANSWER }), legacy);
  assert.deepEqual(statesSentUp(before), [], `no requestState of the client's reached the upstream; the client got: ${res.text}`);
  assert.ok(!res.text.includes('Mallory'), `the upstream did not run Alice's continuation for Bob: ${res.text}`);
  const error = res.json().error;
  assert.equal(error?.code, -32602, res.text);
  assert.equal(error.data.reason, 'not_sealed');
  assert.match(error.message, /send the request again without requestState/);
  assert.equal(upstream.requests.length, before, 'nothing of the refused call went up');

  // The same legacy session still works for a call without one: the bridge runs the input round itself.
  const plain = await post(gw.url, rpc(3, 'tools/call', { name: 'echo', arguments: { text: 'still here' } }), legacy);
  assert.equal(plain.json().result?.content?.[0]?.text, 'still here', plain.text);
});

test('a modern retry still opens its own sealed state (the stage is unchanged for modern calls)', async () => {
  const meta = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } };
  const first = modernRequest(10, 'tools/call', { name: 'ask-with-state', arguments: { topic: 'own' }, _meta: meta });
  const asked = (await post(gw.url, first.body, { ...first.headers, authorization: `Bearer ${ALICE}` })).json().result;
  const retry = modernRequest(11, 'tools/call', { name: 'ask-with-state', arguments: { topic: 'own' }, requestState: asked.requestState, inputResponses: { who: { action: 'accept', content: { name: 'Ada' } } }, _meta: meta });
  const done = (await post(gw.url, retry.body, { ...retry.headers, authorization: `Bearer ${ALICE}` })).json().result;
  assert.deepEqual(JSON.parse(done.content[0].text), { requestState: `${STATE_PREFIX}own`, name: 'Ada' });
});
