// Idempotent writes (issue 12 item 3; the FITsociety seed: "every write tool call must include a unique key in
// params._meta.idempotencyKey"; "the runtime persists the completed response before returning it. A retry
// with the same key replays that durable result instead of running the mutation again"). Against a real
// MCP server (v2 SDK) that counts what it executes, through a real v1 SDK client where a client can send
// the key, and raw requests where the test needs every byte.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { hashKey } from '../../src/auth/key-hash.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startModernMatrixServer, type ModernMatrixServer } from '../fixtures/upstreams/modern-matrix-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
const BOB = 'gh_bob_0123456789abcdefghijklmnopqrstuvwx';
let up: CountingUpstream;
let gw: TestGateway;
let seq = 0;
const unique = (what: string) => `${what}-${++seq}-${Date.now()}`;

before(async () => {
  up = await startCountingUpstream('modern');
  gw = await startGateway({
    upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }, { id: 'bob', hash: hashKey(BOB), scopes: [] }] },
    idempotency: { requireKeys: true },
  });
});
after(async () => {
  await gw.close();
  await up.close();
});

/** tools/call as a 2026-07-28 client, with an idempotency key in `_meta` when given. */
async function call(name: string, args: Record<string, unknown>, key?: unknown, token = ALICE, url = gw.url) {
  const req = modernRequest(++seq, 'tools/call', { name, arguments: args, ...(key !== undefined ? { _meta: { idempotencyKey: key } } : {}) });
  const res = await post(url, req.body, { ...req.headers, authorization: `Bearer ${token}` });
  assert.equal(res.status, 200, res.text);
  return res.json().result as { content: Array<{ text: string }>; isError?: boolean; structuredContent?: { error?: { code: string; message: string } }; _meta?: Record<string, unknown> };
}

describe('which calls need a key', () => {
  test('a write without a key is refused with idempotency_key_required, a tool result the model can act on; nothing runs', async () => {
    const item = unique('nokey');
    const r = await call('record', { item });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent?.error?.code, 'idempotency_key_required');
    assert.match(r.content[0]!.text, /params\._meta\.idempotencyKey/, 'the text says where the key goes');
    assert.equal(up.executions.filter((e) => e.item === item).length, 0);
  });

  test('malformed keys are refused the same way: too short, odd characters, not a string', async () => {
    const item = unique('badkey');
    for (const key of ['short', 'has space in it', '../../etc/passwd', 12345678, { k: 'v' }, '', 'x'.repeat(300)]) {
      const r = await call('record', { item }, key);
      assert.equal(r.structuredContent?.error?.code, 'idempotency_key_required', `key ${JSON.stringify(key)}`);
    }
    assert.equal(up.executions.filter((e) => e.item === item).length, 0);
  });

  test('at start, concurrent first calls wait for the tool list: none slips by as an unknown, unprotected write', async () => {
    const fresh = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], idempotency: { requireKeys: true } });
    try {
      const item = unique('at-start');
      const answers = await Promise.all(Array.from({ length: 8 }, () => call('record', { item }, undefined, ALICE, fresh.url)));
      assert.deepEqual(
        answers.map((a) => a.structuredContent?.error?.code),
        Array.from({ length: 8 }, () => 'idempotency_key_required'),
      );
      assert.equal(up.executions.filter((e) => e.item === item).length, 0);
    } finally {
      await fresh.close();
    }
  });

  test('a read-only tool needs no key', async () => {
    const r = await call('lookup', { item: 'x' });
    assert.equal(r.isError, undefined);
    assert.equal(r.content[0]!.text, 'found x');
  });

  test('config decides too: listed tools are writes whatever their annotations; exempt ones never are', async () => {
    const other = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], idempotency: { requireKeys: true, tools: ['up/lookup'], exempt: ['up/record*'] } });
    try {
      assert.equal((await call('lookup', { item: 'y' }, undefined, ALICE, other.url)).structuredContent?.error?.code, 'idempotency_key_required');
      const item = unique('exempt');
      assert.match((await call('record', { item }, undefined, ALICE, other.url)).content[0]!.text, /^recorded /);
    } finally {
      await other.close();
    }
  });
});

describe('one execution per key', () => {
  test('the same key and request: the stored answer is replayed, marked as such; the upstream ran once', async () => {
    const item = unique('replay');
    const key = unique('key-replay');
    const first = await call('record', { item }, key);
    assert.match(first.content[0]!.text, new RegExp(`^recorded ${item} \\(#\\d+\\)$`));
    assert.equal(first._meta?.['dev.gatehouse/replayed'], undefined);
    const second = await call('record', { item }, key);
    assert.equal(second.content[0]!.text, first.content[0]!.text, 'the very answer of the first call');
    assert.equal(second._meta?.['dev.gatehouse/replayed'], true);
    assert.notEqual(second._meta?.['dev.gatehouse/run_id'], first._meta?.['dev.gatehouse/run_id'], 'the replay is its own audited run');
    assert.equal(up.timesExecuted(key), 1);
  });

  test('the same key and a different request: idempotency_key_conflict, and the second never runs', async () => {
    const key = unique('key-conflict');
    const item = unique('conflict');
    await call('record', { item }, key);
    const other = await call('record', { item: `${item}-changed` }, key);
    assert.equal(other.structuredContent?.error?.code, 'idempotency_key_conflict');
    assert.equal(up.executions.filter((e) => e.item === `${item}-changed`).length, 0);
    const sameKeyOtherTool = await call('record_slowly', { item, ms: 1 }, key);
    assert.equal(sameKeyOtherTool.isError, undefined, "a key is the tool's own: the same key on another tool is another request");
  });

  test('canonical requests: the same arguments in another key order are the same request', async () => {
    const key = unique('key-order');
    const item = unique('order');
    const a = await call('record_slowly', { item, ms: 1 }, key);
    const b = await call('record_slowly', { ms: 1, item }, key);
    assert.equal(b._meta?.['dev.gatehouse/replayed'], true);
    assert.equal(b.content[0]!.text, a.content[0]!.text);
  });

  test('concurrent duplicates: exactly one execution; the others wait for it and get its answer', async () => {
    const key = unique('key-concurrent');
    const item = unique('concurrent');
    const answers = await Promise.all(Array.from({ length: 12 }, () => call('record_slowly', { item, ms: 400 }, key)));
    assert.equal(up.timesExecuted(key), 1);
    const texts = new Set(answers.map((a) => a.content[0]!.text));
    assert.deepEqual([...texts], [answers[0]!.content[0]!.text], 'every caller got the one answer');
    assert.equal(answers.filter((a) => a._meta?.['dev.gatehouse/replayed'] === true).length, 11);
  });

  test("a tool error is an answer too: it is stored and replayed, not run again", async () => {
    const key = unique('key-toolerror');
    const item = unique('toolerror');
    const first = await call('record_fails', { item }, key);
    assert.equal(first.isError, true);
    const again = await call('record_fails', { item }, key);
    assert.equal(again.isError, true);
    assert.equal(again._meta?.['dev.gatehouse/replayed'], true);
    assert.equal(up.timesExecuted(key), 1);
  });

  test("keys are scoped by principal: one caller's key never replays another caller's answer", async () => {
    const key = unique('key-shared');
    const item = unique('scoped');
    const alice = await call('record', { item }, key, ALICE);
    const bob = await call('record', { item }, key, BOB);
    assert.notEqual(bob.content[0]!.text, alice.content[0]!.text, "bob's call ran on its own");
    assert.equal(bob._meta?.['dev.gatehouse/replayed'], undefined);
    assert.equal(up.timesExecuted(key), 2);
    assert.equal((await call('record', { item }, key, ALICE)).content[0]!.text, alice.content[0]!.text);
    assert.equal((await call('record', { item }, key, BOB)).content[0]!.text, bob.content[0]!.text);
    assert.equal(up.timesExecuted(key), 2);
  });

  test('a real SDK client sends its key in _meta and gets the replay', async () => {
    const client = new Client({ name: 'idempotency-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${ALICE}` } } }));
    try {
      const key = unique('key-sdk');
      const item = unique('sdk');
      const first = await client.callTool({ name: 'record', arguments: { item }, _meta: { idempotencyKey: key } });
      const second = await client.callTool({ name: 'record', arguments: { item }, _meta: { idempotencyKey: key } });
      assert.deepEqual(second.content, first.content);
      assert.equal(second._meta?.['dev.gatehouse/replayed'], true);
      assert.equal(up.timesExecuted(key), 1);
    } finally {
      await client.close();
    }
  });
});

describe('keys whose call did not finish', () => {
  test('an upstream that refused the connection never saw the call: the key is free for a retry', async () => {
    const flaky = await startCountingUpstream('modern');
    const port = Number(new URL(flaky.url).port);
    const gwFlaky = await startGateway({ upstreams: [{ name: 'up', url: flaky.url, era: 'modern' }], idempotency: { requireKeys: true } });
    let back: CountingUpstream | undefined;
    try {
      await call('lookup', { item: 'warm' }, undefined, ALICE, gwFlaky.url);
      await flaky.close();
      const key = unique('key-refused');
      const item = unique('refused');
      const req = modernRequest(1, 'tools/call', { name: 'record', arguments: { item }, _meta: { idempotencyKey: key } });
      const down = await post(gwFlaky.url, req.body, req.headers);
      assert.notEqual(down.json().error, undefined, `the call failed: ${down.text}`);
      back = await startCountingUpstream('modern', port);
      const retry = await call('record', { item }, key, ALICE, gwFlaky.url);
      assert.match(retry.content[0]!.text, /^recorded /);
      assert.equal(back.timesExecuted(key), 1);
    } finally {
      await gwFlaky.close();
      await back?.close();
    }
  });

  test('a client that leaves mid-call leaves the key taken: a retry with it is outcome_unknown, never a second run', async () => {
    const key = unique('key-left');
    const item = unique('left');
    const req = modernRequest(1, 'tools/call', { name: 'record_slowly', arguments: { item, ms: 600 }, _meta: { idempotencyKey: key } });
    const leaving = new AbortController();
    const gone = post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${ALICE}` }, leaving.signal).catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 150));
    leaving.abort();
    await gone;
    // The upstream finishes the call it got (it does not stop when cancelled); waited for, not slept on, since
    // a busy CI machine can hand it the call late (a fixed 800 ms failed there).
    for (let waited = 0; up.timesExecuted(key) === 0 && waited < 10_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    const retry = await call('record_slowly', { item, ms: 600 }, key);
    assert.equal(retry.structuredContent?.error?.code, 'outcome_unknown');
    assert.equal(up.timesExecuted(key), 1, 'the upstream ran it once, and not again for the retry');
  });
});

describe('a write that asks for input (2026-07-28 mrtr.mdx)', () => {
  let matrix: ModernMatrixServer;
  let gwAsks: TestGateway;
  before(async () => {
    matrix = await startModernMatrixServer();
    gwAsks = await startGateway({ upstreams: [{ name: 'up', url: matrix.url, era: 'modern' }], idempotency: { requireKeys: true, tools: ['up/trigger-elicitation-request'] } });
  });
  after(async () => {
    await gwAsks.close();
    await matrix.close();
  });

  test('the InputRequiredResult is not kept for the key: the retry with the answers runs, and its answer is the one replayed', async () => {
    const key = unique('key-asks');
    let n = 0;
    const call = async (params: Record<string, unknown>) => {
      const req = modernRequest(++n, 'tools/call', { name: 'trigger-elicitation-request', arguments: {}, _meta: { idempotencyKey: key }, ...params });
      const body = JSON.parse(req.body) as { params: { _meta: Record<string, unknown> } };
      body.params._meta['io.modelcontextprotocol/clientCapabilities'] = { elicitation: { form: {} } };
      return (await post(gwAsks.url, JSON.stringify(body), req.headers)).json().result as Record<string, any>;
    };
    const asked = await call({});
    assert.equal(asked.resultType, 'input_required', JSON.stringify(asked));
    const input = Object.keys(asked.inputRequests ?? {})[0]!;
    const answered = await call({ inputResponses: { [input]: { action: 'accept', content: { name: 'Grace', check: true } } }, ...(asked.requestState !== undefined ? { requestState: asked.requestState } : {}) });
    assert.equal(answered.resultType ?? 'complete', 'complete', JSON.stringify(answered));
    assert.match(answered.content.map((c: { text?: string }) => c.text ?? '').join('\n'), /Grace/);
    assert.equal(answered._meta?.['dev.gatehouse/replayed'], undefined, 'the retry ran');
    // From now on the key holds the finished answer.
    const replayed = await call({});
    assert.equal(replayed._meta?.['dev.gatehouse/replayed'], true, JSON.stringify(replayed));
    assert.match(replayed.content.map((c: { text?: string }) => c.text ?? '').join('\n'), /Grace/);
  });
});
