// Unit tests for ListenHub's own requests upstream (src/upstream/listen-hub.ts): resources/subscribe and
// unsubscribe on the legacy session, one per URI however many listeners want it, each with an id of its
// own (2025-11-25/basic/index.mdx §Requests: an id is never reused within a session); and when it opens the
// GET stream again after the upstream ended it (pauses that double while it keeps ending at once).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../../src/log/logger.js';
import type { JsonRpcMessage } from '../../../src/protocol/jsonrpc.js';
import type { UpstreamMessages } from '../../../src/pipeline/ports.js';
import { ListenHub } from '../../../src/upstream/listen-hub.js';

async function* none(): AsyncGenerator<JsonRpcMessage, void, void> {}

const quiet = createLogger('error', () => {});

/** An upstream session that takes every POST with 202 and nothing more; the GET stream is the test's. */
function upstreamWithGet(openGet: UpstreamMessages['openGet']): UpstreamMessages {
  return {
    upstream: 'up',
    async post() {
      return { status: 202, headers: {}, messages: none() };
    },
    openGet,
    deleteSession: async () => {},
  };
}

test('subscribes once per URI, with a new id for every request, even within one millisecond', async () => {
  const posted: Array<{ id: unknown; method: string; uri: unknown }> = [];
  const client: UpstreamMessages = {
    upstream: 'up',
    async post(message) {
      const m = message as unknown as { id: unknown; method: string; params: { uri: unknown } };
      posted.push({ id: m.id, method: m.method, uri: m.params.uri });
      return { status: 200, headers: {}, messages: none() };
    },
    // No GET stream: the hub only logs that list changes come with responses.
    openGet: async () => null,
    deleteSession: async () => {},
  };
  const hub = new ListenHub(client, () => ({}), quiet);
  const listeners = Array.from({ length: 5 }, (_, i) => ({ filter: { resourceSubscriptions: [`file:///${i}`, 'file:///shared'] }, subscriptionId: i, send: () => {} }));
  // Back to back: well within a millisecond of each other on this machine.
  for (const l of listeners) await hub.add(l);
  for (const l of listeners) await hub.remove(l);
  assert.equal(posted.filter((p) => p.method === 'resources/subscribe' && p.uri === 'file:///shared').length, 1, 'one subscription for a URI several listeners share');
  assert.equal(posted.filter((p) => p.method === 'resources/unsubscribe' && p.uri === 'file:///shared').length, 1, 'given up when its last listener goes');
  assert.equal(posted.length, 12);
  assert.equal(new Set(posted.map((p) => p.id)).size, posted.length, `every request its own id: ${posted.map((p) => String(p.id)).join(', ')}`);
});

test('a request the upstream sends on its GET stream is answered: ping with an empty result, anything else refused', async () => {
  const posted: Array<Record<string, unknown>> = [];
  let answered!: () => void;
  const both = new Promise<void>((resolve) => (answered = resolve));
  async function* stream(): AsyncGenerator<JsonRpcMessage, void, void> {
    yield { jsonrpc: '2.0', id: 'srv-1', method: 'ping' } as JsonRpcMessage;
    yield { jsonrpc: '2.0', id: 'srv-2', method: 'roots/list' } as JsonRpcMessage;
    // The stream stays open, as a GET stream does, until the hub lets it go.
    await new Promise((resolve) => setTimeout(resolve, 2_000).unref());
  }
  const client: UpstreamMessages = {
    upstream: 'up',
    async post(message) {
      posted.push(message as unknown as Record<string, unknown>);
      if (posted.length === 2) answered();
      return { status: 202, headers: {}, messages: none() };
    },
    openGet: async () => stream(),
    deleteSession: async () => {},
  };
  const hub = new ListenHub(client, () => ({}), quiet);
  const listener = { filter: { toolsListChanged: true }, subscriptionId: 1, send: () => {} };
  await hub.add(listener);
  await Promise.race([both, new Promise((_, reject) => setTimeout(() => reject(new Error(`answers so far: ${JSON.stringify(posted)}`)), 2_000))]);
  await hub.remove(listener);
  assert.deepEqual(posted[0], { jsonrpc: '2.0', id: 'srv-1', result: {} });
  assert.equal(posted[1]!.id, 'srv-2');
  assert.equal((posted[1]!.error as { code: number }).code, -32601);
});

test('a resource the upstream refuses to subscribe to is taken out of the listener\'s filter, and never unsubscribed', async () => {
  const posted: Array<{ method: string; uri: unknown }> = [];
  const client: UpstreamMessages = {
    upstream: 'up',
    async post(message) {
      const m = message as unknown as { id: unknown; method: string; params: { uri: unknown } };
      posted.push({ method: m.method, uri: m.params.uri });
      const refused = m.params.uri === 'file:///secret';
      async function* answer(): AsyncGenerator<JsonRpcMessage, void, void> {
        yield (refused ? { jsonrpc: '2.0', id: m.id, error: { code: -32602, message: 'Resource not found' } } : { jsonrpc: '2.0', id: m.id, result: {} }) as JsonRpcMessage;
      }
      return { status: 200, headers: {}, messages: answer() };
    },
    openGet: async () => null,
    deleteSession: async () => {},
  };
  const hub = new ListenHub(client, () => ({}), quiet);
  const listener = { filter: { resourceSubscriptions: ['file:///open', 'file:///secret'] }, subscriptionId: 1, send: () => {} };
  await hub.add(listener);
  assert.deepEqual(listener.filter.resourceSubscriptions, ['file:///open'], 'the acknowledgment will name only what the upstream accepted');
  await hub.remove(listener);
  assert.deepEqual(posted, [
    { method: 'resources/subscribe', uri: 'file:///open' },
    { method: 'resources/subscribe', uri: 'file:///secret' },
    { method: 'resources/unsubscribe', uri: 'file:///open' },
  ]);
});

test('hold keeps a GET stream open without a listener; its server requests are offered to the calls first, pings never', async () => {
  const posted: Array<Record<string, unknown>> = [];
  let gets = 0;
  let release!: () => void;
  const open = new Promise<void>((resolve) => (release = resolve));
  async function* stream(): AsyncGenerator<JsonRpcMessage, void, void> {
    yield { jsonrpc: '2.0', id: 'srv-1', method: 'ping' } as JsonRpcMessage;
    yield { jsonrpc: '2.0', id: 'srv-2', method: 'roots/list' } as JsonRpcMessage;
    yield { jsonrpc: '2.0', id: 'srv-3', method: 'sampling/createMessage' } as JsonRpcMessage;
    await open;
  }
  const client: UpstreamMessages = {
    upstream: 'up',
    async post(message) {
      posted.push(message as unknown as Record<string, unknown>);
      return { status: 202, headers: {}, messages: none() };
    },
    openGet: async (_headers, signal) => {
      gets++;
      signal.addEventListener('abort', () => release(), { once: true });
      return stream();
    },
    deleteSession: async () => {},
  };
  const offered: string[] = [];
  // The calls take roots/list (one call in flight), not the sampling request (refused by the hub).
  const hub = new ListenHub(client, () => ({}), quiet, () => {}, (request) => {
    offered.push(request.method);
    return request.method === 'roots/list';
  });
  const letGo = await hub.hold();
  assert.equal(gets, 1, 'the GET stream is open before hold resolves, with no listener');
  for (let i = 0; i < 50 && posted.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(offered, ['roots/list', 'sampling/createMessage'], 'a ping is not offered to the calls');
  assert.deepEqual(posted.map((p) => p.id), ['srv-1', 'srv-3'], 'the ping is answered, the request no call took is refused, the one taken is left to its call');
  assert.deepEqual(posted[0]!.result, {});
  assert.equal((posted[1]!.error as { code: number }).code, -32601);
  letGo();
  await open;
  assert.equal(hub.size, 0);
});

test('hold waits for the GET stream at most a second: a server that sends its headers only with its first event does not hold up the call', async (t) => {
  // The hold's own clock is mocked: only its one-second timer can let the call go, so what is checked is
  // what ends the wait (that timer, while the headers still have not come), not how long it took.
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let aborted = false;
  // Headers that never come (until the hub lets go).
  const client = upstreamWithGet((_headers, signal) =>
    new Promise((resolve) => {
      signal.addEventListener('abort', () => {
        aborted = true;
        resolve(null);
      }, { once: true });
    }),
  );
  const hub = new ListenHub(client, () => ({}), quiet);
  let wentUp = false;
  const holding = hub.hold().then((letGo) => {
    wentUp = true;
    return letGo;
  });
  const turns = async (): Promise<void> => {
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  };
  await turns();
  assert.equal(wentUp, false, 'the call waits for the GET stream first');
  t.mock.timers.tick(999);
  await turns();
  assert.equal(wentUp, false, 'still waiting just short of a second');
  t.mock.timers.tick(1);
  await turns();
  assert.equal(wentUp, true, 'a second on, the call goes up without the stream');
  const letGo = await holding;
  assert.equal(aborted, false, 'the stream goes on opening meanwhile');
  letGo();
  assert.equal(aborted, true, 'letting go ends the GET that is still opening');
});

test('once a call waited a second for a GET the upstream did not answer, the next calls go up without waiting, until a GET is answered', async (t) => {
  // The hold's clock is mocked: a call that waits can only go up by the GET's answer or by a tick of that clock,
  // so a call that goes up with neither did not wait (ordering, not timing).
  t.mock.timers.enable({ apis: ['setTimeout'] });
  /** The GETs asked, each answered only when the test says (a server that sends its headers late on purpose). */
  const gets: Array<{ answer: () => void; signal: AbortSignal }> = [];
  async function* quietStream(signal: AbortSignal): AsyncGenerator<JsonRpcMessage, void, void> {
    if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  }
  const client = upstreamWithGet((_headers, signal) =>
    new Promise((resolve) => {
      gets.push({ answer: () => resolve(quietStream(signal)), signal });
      signal.addEventListener('abort', () => resolve(null), { once: true });
    }),
  );
  const hub = new ListenHub(client, () => ({}), quiet);
  const turns = async (): Promise<void> => {
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  };
  const call = () => {
    const state: { wentUp: boolean; letGo?: () => void } = { wentUp: false };
    void hub.hold().then((letGo) => {
      state.wentUp = true;
      state.letGo = letGo;
    });
    return state;
  };

  const first = call();
  await turns();
  assert.equal(first.wentUp, false, 'the first call waits for the GET stream');
  t.mock.timers.tick(1_000);
  await turns();
  assert.equal(first.wentUp, true, 'a second on, it goes up without the stream');
  first.letGo!();
  assert.equal(gets[0]!.signal.aborted, true, 'its GET, never answered, is let go with it');

  const second = call();
  await turns();
  assert.equal(gets.length, 2, 'the next call opens the GET stream again');
  assert.equal(second.wentUp, true, 'and goes up before that GET is answered, with no tick of the clock');
  gets[1]!.answer();
  await turns();
  second.letGo!();

  const third = call();
  await turns();
  assert.equal(gets.length, 3);
  assert.equal(third.wentUp, false, 'once a GET was answered, a call waits for the stream again');
  gets[2]!.answer();
  await turns();
  assert.equal(third.wentUp, true, 'and goes up once it is answered');
  third.letGo!();
});

test('a GET stream the upstream keeps ending at once is reopened after pauses that double up to the cap; one that lived starts them afresh', async (t) => {
  // The pauses run on a mocked clock, moved by hand: each reopen must come when its pause is over, and not a
  // tick before. The defaults are 1 s, 30 s and 10 s; a stream lives by the real clock (performance.now), so
  // livedMs is short and the one stream that lives waits it out in turns of the event loop.
  const timings = { firstMs: 100, maxMs: 800, livedMs: 20 };
  const streams = { opened: 0, ended: 0 };
  async function* stream(lives: boolean): AsyncGenerator<JsonRpcMessage, void, void> {
    const from = performance.now();
    for (let i = 0; lives && i < 100_000 && performance.now() - from < 2 * timings.livedMs; i++) await new Promise((r) => setImmediate(r));
    streams.ended++;
  }
  const client = upstreamWithGet(async () => {
    streams.opened++;
    return stream(streams.opened === 3);
  });
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const turns = async (): Promise<void> => {
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  };
  const hub = new ListenHub(client, () => ({}), quiet, () => {}, () => false, timings);
  const listener = { filter: { toolsListChanged: true }, subscriptionId: 1, send: () => {} };
  await hub.add(listener);
  await turns();
  assert.equal(streams.opened, 1);
  // The pause before each reopen: doubling while streams end at once; the third stream lives, so the pause
  // after it is the first one again, and so is the next; then doubling again, never past the cap.
  const pauses = [100, 200, 100, 100, 200, 400, 800, 800];
  for (const [i, pause] of pauses.entries()) {
    // Each stream is let end first (the living one takes a while): its end, not the clock, starts the pause.
    for (let turn = 0; turn < 100_000 && streams.ended < streams.opened; turn++) await new Promise((r) => setImmediate(r));
    await turns();
    t.mock.timers.tick(pause - 1);
    await turns();
    assert.equal(streams.opened, i + 1, `reopen ${i + 1} came before its pause of ${pause} ms`);
    t.mock.timers.tick(1);
    await turns();
    assert.equal(streams.opened, i + 2, `reopen ${i + 1} did not come after its pause of ${pause} ms`);
  }
  await hub.remove(listener);
  // Nothing reopens once the last listener is gone.
  await turns();
  t.mock.timers.tick(10_000);
  await turns();
  assert.equal(streams.opened, pauses.length + 1);
});

test('while a reopen waits out its pause, a new listener or call does not open the GET stream early', async () => {
  const timings = { firstMs: 100, maxMs: 5_000, livedMs: 10_000 };
  const opened: number[] = [];
  async function* endsAtOnce(): AsyncGenerator<JsonRpcMessage, void, void> {}
  const client = upstreamWithGet(async () => {
    opened.push(performance.now());
    return endsAtOnce();
  });
  const hub = new ListenHub(client, () => ({}), quiet, () => {}, () => false, timings);
  const first = { filter: { toolsListChanged: true }, subscriptionId: 1, send: () => {} };
  await hub.add(first);
  // Let it end a few times: after 100, 200 and 400 ms, the pause is now 800 ms.
  for (let i = 0; i < 200 && opened.length < 4; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const count = opened.length;
  await new Promise((resolve) => setTimeout(resolve, 20));
  const second = { filter: { toolsListChanged: true }, subscriptionId: 2, send: () => {} };
  await hub.add(second);
  const letGo = await hub.hold();
  assert.equal(opened.length, count, 'neither the listener nor the call opened it inside the pause');
  letGo();
  await hub.remove(first);
  await hub.remove(second);
});

/** An upstream whose resources/subscribe and unsubscribe take `ms` to be answered, refusing the URIs in `refuse`. */
function slowSubscriptions(ms: number, refuse: Set<string>, log: string[]): UpstreamMessages {
  return {
    upstream: 'up',
    async post(message) {
      const m = message as unknown as { id: unknown; method: string; params: { uri: string } };
      log.push(`${m.method} ${m.params.uri} sent`);
      await new Promise((resolve) => setTimeout(resolve, ms));
      log.push(`${m.method} ${m.params.uri} answered`);
      const refused = m.method === 'resources/subscribe' && refuse.has(m.params.uri);
      async function* answer(): AsyncGenerator<JsonRpcMessage, void, void> {
        yield (refused ? { jsonrpc: '2.0', id: m.id, error: { code: -32602, message: 'Resource not found' } } : { jsonrpc: '2.0', id: m.id, result: {} }) as JsonRpcMessage;
      }
      return { status: 200, headers: {}, messages: answer() };
    },
    openGet: async () => null,
    deleteSession: async () => {},
  };
}

test('two listeners added at once for one URI share its one subscription\'s answer: a refusal takes it out of both filters (subscriptions.mdx §Acknowledgment)', async () => {
  const log: string[] = [];
  const hub = new ListenHub(slowSubscriptions(100, new Set(['file:///secret']), log), () => ({}), quiet);
  const a = { filter: { resourceSubscriptions: ['file:///secret'] }, subscriptionId: 1, send: () => {} };
  const b = { filter: { resourceSubscriptions: ['file:///secret'] }, subscriptionId: 2, send: () => {} };
  await Promise.all([hub.add(a), hub.add(b)]);
  assert.deepEqual(a.filter.resourceSubscriptions, []);
  assert.deepEqual(b.filter.resourceSubscriptions, [], 'the second listener is not acknowledged a subscription the upstream refused');
  await hub.remove(a);
  await hub.remove(b);
  assert.deepEqual(log, ['resources/subscribe file:///secret sent', 'resources/subscribe file:///secret answered'], 'one subscribe, and no unsubscribe of what was never subscribed');
});

test('a listener added as the last one for its URI leaves is subscribed after the unsubscribe is answered, never alongside it', async () => {
  const log: string[] = [];
  const hub = new ListenHub(slowSubscriptions(100, new Set(), log), () => ({}), quiet);
  const a = { filter: { resourceSubscriptions: ['file:///x'] }, subscriptionId: 1, send: () => {} };
  await hub.add(a);
  const b = { filter: { resourceSubscriptions: ['file:///x'] }, subscriptionId: 2, send: () => {} };
  // Sent at once on two connections, the unsubscribe could reach the upstream after the subscribe, and
  // the new listener would hear nothing of a resource it was acknowledged.
  await Promise.all([hub.remove(a), hub.add(b)]);
  assert.deepEqual(b.filter.resourceSubscriptions, ['file:///x']);
  assert.deepEqual(log.slice(2), ['resources/unsubscribe file:///x sent', 'resources/unsubscribe file:///x answered', 'resources/subscribe file:///x sent', 'resources/subscribe file:///x answered']);
  await hub.remove(b);
});
