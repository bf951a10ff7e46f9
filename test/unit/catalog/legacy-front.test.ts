// The legacy clients' sessions in front of the catalog, handed over to a reload's new catalog
// (catalog/legacy-front.ts): each request goes to the catalog serving now, and a session's open listen
// (subscriptions/listen, 2026-07-28/basic/patterns/subscriptions.mdx) on the old catalog is ended at the hand-over,
// so the bridge opens it again on the new one (with its subscriptions, under the new rules). Left open, it
// went on relaying the old catalog's notifications, judged by the old rules, and missed a rebuilt member's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LegacyFront, type FrontTarget } from '../../../src/catalog/legacy-front.js';
import type { Catalog } from '../../../src/catalog/catalog.js';
import type { JsonRpcMessage } from '../../../src/protocol/jsonrpc.js';
import type { UpstreamReply } from '../../../src/pipeline/ports.js';

/**
 * A catalog whose listens stay open until their signal aborts, and which records what it was asked; its
 * discover result is built when `prepared` settles.
 */
function fakeTarget(name: string, prepared: Promise<void> = Promise.resolve()): FrontTarget & { asked: string[]; signals: AbortSignal[] } {
  const asked: string[] = [];
  const signals: AbortSignal[] = [];
  const catalog = {
    async post(message: JsonRpcMessage, _headers: Record<string, string>, signal?: AbortSignal): Promise<UpstreamReply> {
      asked.push((message as { method: string }).method);
      if (signal) signals.push(signal);
      async function* open(): AsyncGenerator<JsonRpcMessage, void, void> {
        yield { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { from: name } };
        // A listen runs until it is aborted.
        if (signal?.aborted) return;
        await new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true }));
      }
      return { status: 200, headers: {}, messages: open() };
    },
  } as unknown as Catalog;
  return { catalog, asked, signals, profile: undefined, forgetProfile() {}, prepare: () => prepared, handle: async () => assert.fail('not called') };
}

test('a listen on the old catalog ends at the hand-over, and the next request goes to the new one', async () => {
  const front = new LegacyFront(() => ({ handle: async () => assert.fail('not called'), close: async () => {}, rejudgeSubscriptions: async () => assert.fail('not called') }));
  const old = fakeTarget('old');
  front.serve(old);
  const bridgeListen = new AbortController();
  const reply = await front.post({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: {} }, {}, bridgeListen.signal);
  const first = await reply.messages.next();
  assert.deepEqual((first.value as { params: unknown }).params, { from: 'old' });
  const next = fakeTarget('new');
  front.serve(next);
  await new Promise((r) => setImmediate(r));
  assert.equal(old.signals[0]!.aborted, true, 'the old catalog is told to end the listen');
  assert.equal(bridgeListen.signal.aborted, false, 'the bridge\'s own signal is not aborted: it sees the upstream end the listen, and opens it again');
  const ended = await reply.messages.next();
  assert.equal(ended.done, true, 'the listen ends for the bridge');
  await front.post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, {});
  assert.deepEqual(next.asked, ['tools/list'], 'the next request goes to the new catalog');
  assert.deepEqual(old.asked, ['subscriptions/listen']);
});

test('serving the same catalog again ends no listen', async () => {
  const front = new LegacyFront(() => ({ handle: async () => assert.fail('not called'), close: async () => {}, rejudgeSubscriptions: async () => assert.fail('not called') }));
  const only = fakeTarget('only');
  front.serve(only);
  await front.post({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: {} }, {}, new AbortController().signal);
  front.serve(only);
  assert.equal(only.signals[0]!.aborted, false);
});

// The bridge opens a listen ended at the hand-over again from the new catalog's discover result: ended before
// that result was built (it was built by the first legacy request to reach the new catalog, and one the
// access stage refuses never does), the bridge found none and asked again after a pause doubling to 30 s.
test('the old catalog\'s listens end once the new catalog has its discover result, and also when it could not be built', async () => {
  for (const outcome of ['built', 'failed'] as const) {
    const front = new LegacyFront(() => ({ handle: async () => assert.fail('not called'), close: async () => {}, rejudgeSubscriptions: async () => assert.fail('not called') }));
    const old = fakeTarget('old');
    front.serve(old);
    await front.post({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: {} }, {}, new AbortController().signal);
    let settle!: () => void;
    const prepared = new Promise<void>((resolve, reject) => (settle = outcome === 'built' ? resolve : () => reject(new Error('no member answered'))));
    front.serve(fakeTarget('new', prepared));
    await new Promise((r) => setImmediate(r));
    assert.equal(old.signals[0]!.aborted, false, `${outcome}: the listen goes on while the new catalog's discover result is being built`);
    settle();
    await new Promise((r) => setImmediate(r));
    assert.equal(old.signals[0]!.aborted, true, `${outcome}: then it ends, to be opened again on the new catalog`);
  }
});
