// An upstream's requestState is sealed to the caller, call and arguments it was given for
// (shared/spec/docs/specification/2026-07-28/basic/patterns/mrtr.mdx §Server Requirements 4–5, §Security
// Considerations; GATEWAY-REQUIREMENTS.md: state handle hijacking). Behind Gatehouse the upstream sees one
// principal, Gatehouse itself, so it cannot tell Alice's retry from Bob's: Gatehouse binds the state on the
// way out and checks it on the retry, and the upstream gets its own string back byte for byte.
// The upstream is a real 2026-07-28 server (v2 SDK); one test drives a real v2 client.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { STATE_PREFIX, type ModernServer } from '../fixtures/upstreams/modern-server.js';
import { ALICE, BOB, startModernForAliceAndBob } from '../helpers/alice-and-bob.js';
import type { TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { readSseUntil } from '../helpers/sse.js';

const ANSWER = { who: { action: 'accept', content: { name: 'Ada' } } };

let upstream: ModernServer;
let gw: TestGateway;
let nextId = 0;

async function call(key: string, params: Record<string, unknown>) {
  const m = modernRequest(++nextId, 'tools/call', { name: 'ask-with-state', ...params, _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } } });
  return post(gw.url, m.body, { ...m.headers, authorization: `Bearer ${key}` });
}

/** How many tools/call requests with this id reached the upstream. */
const upstreamSaw = (id: number): number => upstream.requests.filter((r) => (r.body as { id?: unknown; method?: unknown } | undefined)?.id === id).length;

describe('requestState sealing (modern pass-through)', () => {
  before(async () => {
    ({ upstream, gw } = await startModernForAliceAndBob());
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  test("the client gets a sealed state; its retry gives the upstream its own state back, byte for byte", async () => {
    const asked = (await call(ALICE, { arguments: { topic: 'x' } })).json().result;
    assert.equal(asked.resultType, 'input_required', JSON.stringify(asked));
    assert.ok(typeof asked.requestState === 'string' && asked.requestState.startsWith('gh1.'), asked.requestState);
    assert.notEqual(asked.requestState, `${STATE_PREFIX}x`);
    assert.deepEqual(Object.keys(asked.inputRequests), ['who']);
    const done = (await call(ALICE, { arguments: { topic: 'x' }, requestState: asked.requestState, inputResponses: ANSWER })).json().result;
    assert.equal(done.isError, undefined, JSON.stringify(done));
    assert.deepEqual(JSON.parse(done.content[0].text), { requestState: `${STATE_PREFIX}x`, name: 'Ada' });
  });

  test("another caller's retry with Alice's state is refused with -32602 and never reaches the upstream", async () => {
    const asked = (await call(ALICE, { arguments: { topic: 'y' } })).json().result;
    const res = await call(BOB, { arguments: { topic: 'y' }, requestState: asked.requestState, inputResponses: ANSWER });
    const error = res.json().error;
    assert.equal(error.code, -32602, res.text);
    assert.equal(error.data.reason, 'invalid');
    assert.match(error.message, /send the request again without requestState/);
    assert.equal(upstreamSaw(nextId), 0);
    // Alice's own retry still works: a refused attempt by someone else uses nothing up.
    const done = (await call(ALICE, { arguments: { topic: 'y' }, requestState: asked.requestState, inputResponses: ANSWER })).json().result;
    assert.equal(JSON.parse(done.content[0].text).requestState, `${STATE_PREFIX}y`);
  });

  test('a state presented with other arguments, altered, or not sealed by Gatehouse is refused', async () => {
    const asked = (await call(ALICE, { arguments: { topic: 'z' } })).json().result;
    const sealed = asked.requestState as string;
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['other arguments', { arguments: { topic: 'other' }, requestState: sealed }, 'invalid'],
      ["the upstream's part altered", { arguments: { topic: 'z' }, requestState: sealed.replace(/z$/, 'w') }, 'invalid'],
      ['the expiry moved', { arguments: { topic: 'z' }, requestState: sealed.replace(/^gh1\.[0-9a-z]+\./, 'gh1.zzzzzzz.') }, 'invalid'],
      ["the upstream's own state, unsealed", { arguments: { topic: 'z' }, requestState: `${STATE_PREFIX}z` }, 'not_sealed'],
    ];
    for (const [what, params, reason] of cases) {
      const res = await call(ALICE, { ...params, inputResponses: ANSWER });
      assert.equal(res.json().error?.code, -32602, `${what}: ${res.text}`);
      assert.equal(res.json().error.data.reason, reason, what);
      assert.equal(upstreamSaw(nextId), 0, what);
    }
  });

  test('an answer that comes as SSE (after a progress notification) is sealed too', async () => {
    const m = modernRequest(++nextId, 'tools/call', { name: 'ask-with-state', arguments: { topic: 'sse' }, _meta: { progressToken: 'p1', 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } } });
    const res = await request(gw.url, { method: 'POST', headers: { ...m.headers, authorization: `Bearer ${ALICE}` }, body: m.body });
    assert.match(String(res.headers['content-type']), /^text\/event-stream/);
    const messages = await readSseUntil(res.body, (ms) => ms.some((x) => x.id === nextId));
    assert.ok(messages.some((x) => x.method === 'notifications/progress'), JSON.stringify(messages));
    const asked = messages.find((x) => x.id === nextId)!.result;
    assert.equal(asked.resultType, 'input_required');
    assert.ok(asked.requestState.startsWith('gh1.'), asked.requestState);
    const done = (await call(ALICE, { arguments: { topic: 'sse' }, requestState: asked.requestState, inputResponses: ANSWER })).json().result;
    assert.equal(JSON.parse(done.content[0].text).requestState, `${STATE_PREFIX}sse`);
  });

  test('a real v2 client fulfils the question and retries with the sealed state; the upstream sees its own', async () => {
    const client = new Client({ name: 'request-state-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Grace' } }));
    // What the client sent: its retry must echo the state it was given, which is Gatehouse's seal.
    const sentStates: unknown[] = [];
    const recordingFetch = (url: string | URL, init?: RequestInit): Promise<Response> => {
      if (typeof init?.body === 'string') sentStates.push((JSON.parse(init.body) as { params?: { requestState?: unknown } }).params?.requestState);
      return fetch(url, init);
    };
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { fetch: recordingFetch, requestInit: { headers: { authorization: `Bearer ${ALICE}` } } }), { timeout: 10_000 });
    try {
      const before = upstream.requests.length;
      const result = (await client.callTool({ name: 'ask-with-state', arguments: { topic: 'sdk' } })) as { content: Array<{ text: string }> };
      assert.deepEqual(JSON.parse(result.content[0]!.text), { requestState: `${STATE_PREFIX}sdk`, name: 'Grace' });
      const echoed = sentStates.filter((s) => s !== undefined);
      assert.equal(echoed.length, 1);
      assert.match(String(echoed[0]), /^gh1\.[0-9a-z]+\.[A-Za-z0-9_-]{43}\.upstream-state:sdk$/);
      // The first request carried no state; the retry carried the upstream's own, unsealed by Gatehouse.
      const states = upstream.requests.slice(before).map((r) => (r.body as { params?: { requestState?: unknown } }).params?.requestState);
      assert.deepEqual(states.filter((s) => s !== undefined), [`${STATE_PREFIX}sdk`]);
    } finally {
      await client.close();
    }
  });
});
