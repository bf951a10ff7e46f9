// A modern stdio server runs as one child shared by every caller (GATEWAY-REQUIREMENTS §16.1: ids and
// progress tokens rewritten per upstream). Two callers may send the same request id and progress token at
// once: the child must see distinct ones (basic/index.mdx §Requests: ids unique among outstanding
// requests; utilities/progress.mdx: tokens unique across active requests), and each caller must get its
// own answer and only its own progress, under the id and token it sent. The upstream is the v2 SDK's
// modern-only stdio fixture.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { hashKey } from '../../src/auth/key-hash.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const MODERN_STDIO = fileURLToPath(new URL('../fixtures/upstreams/modern-stdio-server.mjs', import.meta.url));
const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
const BOB = 'gh_bob_0123456789abcdefghijklmnopqrstuvwx';

let gw: TestGateway;
before(async () => {
  gw = await startGateway({
    upstreams: [{ name: 'm', command: [process.execPath, MODERN_STDIO] }],
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE) }, { id: 'bob', hash: hashKey(BOB) }] },
  });
});
after(async () => {
  await gw.close();
});

/** One tools/call with id 1 and progress token "p", as both callers send it; the messages of its answer. */
async function callAs(key: string, steps: number): Promise<Array<Record<string, any>>> {
  const req = modernRequest(1, 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 0.4, steps }, _meta: { progressToken: 'p' } });
  const res = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${key}` });
  assert.equal(res.status, 200, res.text);
  return String(res.headers['content-type']).startsWith('text/event-stream')
    ? res.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as Record<string, any>)
    : [res.json()];
}

test('two callers with the same request id and progress token, at once: each gets its own answer and only its own progress', async () => {
  const [alice, bob] = await Promise.all([callAs(ALICE, 2), callAs(BOB, 4)]);
  for (const [who, messages, steps] of [['alice', alice, 2], ['bob', bob, 4]] as const) {
    const final = messages.find((m) => m.id !== undefined);
    assert.equal(final?.id, 1, `${who}: ${JSON.stringify(messages)}`);
    assert.match(final?.result?.content?.[0]?.text ?? '', new RegExp(`Steps: ${steps}\\.`), `${who}: ${JSON.stringify(final)}`);
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    assert.equal(progress.length, steps, `${who} got its own ${steps} progress notifications: ${JSON.stringify(progress)}`);
    assert.ok(progress.every((p) => p.params.progressToken === 'p' && p.params.total === steps), `${who}: under the token it sent`);
  }
});

/** A modern client's notifications/cancelled (stdio.mdx carries it; Gatehouse passes it on to the child). */
async function cancelAs(key: string, requestId: unknown): Promise<number> {
  const n = modernRequest(0, 'notifications/cancelled', { requestId, reason: 'test' });
  const body = JSON.parse(n.body) as Record<string, unknown>;
  delete body.id;
  const res = await post(gw.url, JSON.stringify(body), { ...n.headers, authorization: `Bearer ${key}` });
  return res.status;
}

test("a cancellation reaches only the sender's own call: naming Gatehouse's upstream ids, or an id two of its calls share, stops nothing", async () => {
  // utilities/cancellation.mdx: a cancellation names a request of the same sender. Alice guesses the ids
  // Gatehouse gives the child, and sends them while Bob's call runs; passed as they are, one would stop it.
  const bob = callAs(BOB, 2);
  await new Promise((r) => setTimeout(r, 100));
  for (let n = 1; n <= 40; n++) assert.equal(await cancelAs(ALICE, `gh-shared-${n}`), 202);
  const bobs = await bob;
  assert.match(bobs.find((m) => m.id === 1)?.result?.content?.[0]?.text ?? '', /Steps: 2\./, `Bob's call ran to its end: ${JSON.stringify(bobs)}`);

  // Two clients of one key, both with id 1 in flight: a cancellation of id 1 cannot tell which is meant.
  const first = callAs(ALICE, 2);
  const second = callAs(ALICE, 3);
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(await cancelAs(ALICE, 1), 202);
  const [a, b] = await Promise.all([first, second]);
  assert.match(a.find((m) => m.id === 1)?.result?.content?.[0]?.text ?? '', /Steps: 2\./, JSON.stringify(a));
  assert.match(b.find((m) => m.id === 1)?.result?.content?.[0]?.text ?? '', /Steps: 3\./, JSON.stringify(b));
});
