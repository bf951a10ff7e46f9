// A legacy client's GET stream, in front of a modern upstream, is fed by an upstream subscriptions/listen
// whose filter names the client's subscribed URIs (GATEWAY-REQUIREMENTS §16.2 "Subscriptions ⇄ GET
// stream"). A filter is fixed per listen, so each resources/subscribe replaces the listen, and the new one
// is opened before the old one closes, so that nothing goes unheard in between. That takes two of the
// server's listen slots for a moment: a server at its cap (the v2 SDK's `maxSubscriptions`) refuses the
// replacement. Until 5 December that refusal was taken for a listen that failed: the session was left
// with no listen at all for a pause that doubled with each subscribe (1 s, 2 s, 4 s, 8 s...), so that a
// client's fourth subscribe in a row waited past its 5 s and was refused, and a change published in
// the gap was never told. Now a replacement refused while the listen it replaces was open is opened again at
// once, the old one closed first; and since changes while no listen was open went unheard, the client is
// told, once the new listen is acknowledged, to refetch the lists it covers and to read again each resource
// it was already hearing of (notifications/resources/updated).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSubscribableModernServer, type SubscribableModernServer } from '../fixtures/upstreams/subscribable-modern-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import type { GatewayOptions } from '../../src/gateway.js';
import { legacySubscriber, type LegacySubscriber } from '../helpers/legacy-subscriber.js';
import { waitUntil } from '../helpers/stdio-children.js';

/** A server with one listen slot, the gateway in front, and a legacy client whose GET stream's listen holds the slot. */
async function withOneSlotHeld(run: (up: SubscribableModernServer, subscriber: LegacySubscriber, gw: TestGateway) => Promise<void>, options: GatewayOptions = {}): Promise<void> {
  const up = await startSubscribableModernServer({ maxSubscriptions: 1 });
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] }, options);
  const subscriber = legacySubscriber();
  try {
    await subscriber.connect(gw.url);
    assert.ok(await waitUntil(() => up.openListens() === 1, 5_000), 'the GET stream\'s listen holds the one slot');
    await run(up, subscriber, gw);
  } finally {
    await subscriber.client.close();
    await gw.close();
    await up.close();
  }
}

test('a client holding the server\'s one listen slot subscribes to four URIs in a row: each is taken, and each is heard', () =>
  withOneSlotHeld(async (up, { client, updated }) => {
    const uris = ['file:///a', 'file:///b', 'file:///c', 'file:///d'];
    for (const uri of uris) assert.deepEqual(await client.subscribeResource({ uri }, { timeout: 15_000 }), {}, `subscribed to ${uri}`);
    assert.ok(await waitUntil(() => up.openListens() === 1, 5_000), 'one listen open upstream');
    assert.deepEqual(up.listenFilters.at(-1)?.resourceSubscriptions, uris, 'the open listen carries every URI');
    updated.length = 0;
    up.notify.resourceUpdated('file:///d');
    assert.ok(await waitUntil(() => updated.includes('file:///d'), 5_000), 'the last URI subscribed is heard');
  }));

test('a change published while a listen at the cap is replaced is not lost: the client is told to read the resource again', () =>
  withOneSlotHeld(async (up, { client, updated }) => {
    assert.deepEqual(await client.subscribeResource({ uri: 'file:///a' }, { timeout: 15_000 }), {});
    assert.ok(await waitUntil(() => up.openListens() === 1, 5_000), 'the listen carrying file:///a is open');
    // file:///a changes just as the listen that carries it closes, before its replacement is acknowledged.
    up.onceListenCloses('file:///a', () => up.notify.resourceUpdated('file:///a'));
    updated.length = 0;
    assert.deepEqual(await client.subscribeResource({ uri: 'file:///b' }, { timeout: 15_000 }), {});
    assert.ok(await waitUntil(() => updated.includes('file:///a'), 5_000), `the change to file:///a was told: ${JSON.stringify(updated)}`);
  }));

// A replacement the server refused beside the listen it replaces is asked again after a short pause (the server
// frees the closed listen's place only once it has seen the close). Until 5 December a subscribe that came in
// that pause opened a listen of its own at once, which the server refused as it had the replacement, and that
// refusal was taken for a failing upstream: a 1 s pause before the next listen, doubling with each one. The
// server here frees the place only once it has refused a listen naming the URI subscribed in the pause. The
// bridge's pauses are held here until the test ends them, so that the second subscribe comes within one
// however slowly it travels (timed, they end 100, 200 and 400 ms after they begin).
test('a subscribe made while a refused replacement waits out its pause joins it: one listen carries both URIs, and no refusal is taken for a failing upstream', async () => {
  /** The bridge's pauses, in the order they began; each ends when the test calls its `end`. */
  const pauses: Array<{ end: () => void; cancelled: boolean }> = [];
  const replacePause: GatewayOptions['replacePause'] = (resume) => {
    const pause = { end: () => void (pause.cancelled || resume()), cancelled: false };
    pauses.push(pause);
    return () => void (pause.cancelled = true);
  };
  const pausesBegun = async (count: number): Promise<boolean> => waitUntil(() => pauses.length >= count, 10_000);
  await withOneSlotHeld(async (up, { client }, gw) => {
    const uris = ['file:///a', 'file:///b'];
    const failing = () => gw.logs.filter((l) => l.msg === 'upstream refused the listen' || l.msg === 'upstream listen failed');
    up.refuseListensUntilOneNames(uris);
    const first = client.subscribeResource({ uri: 'file:///a' }, { timeout: 15_000 });
    // Awaited below; an assertion failing first closes the client, and its rejection must not hide the failure.
    first.catch(() => {});
    assert.ok(await pausesBegun(1), 'the replacement carrying file:///a was refused beside the open listen, and its pause began');
    assert.ok(gw.logs.some((l) => l.msg === 'upstream did not take the listen that replaces the open one; asking again once that one is closed'), 'the refusal was told as a replacement\'s');
    const second = client.subscribeResource({ uri: 'file:///b' }, { timeout: 15_000 });
    second.catch(() => {});
    // The second subscribe has reached the bridge once it either joined the pending replacement or opened a
    // listen of its own, which the server refuses (the gate lets through only the listen after one naming both).
    const joined = () => gw.logs.some((l) => l.msg === 'resources/subscribe or unsubscribe made while a replacement listen waits out its pause: the replacement carries it');
    assert.ok(await waitUntil(() => joined() || failing().length > 0, 10_000), 'the subscribe to file:///b reached the bridge');
    assert.deepEqual(failing(), [], 'the subscribe made in the pause opened no listen the server refused');
    pauses[0]!.end();
    // The replacement, now carrying both URIs, is refused once more (the server frees the place only then), and
    // asked again after a second pause.
    assert.ok(await pausesBegun(2), `the replacement carrying both URIs was refused, and asked again after a pause: ${JSON.stringify(up.refusedListenFilters)}`);
    assert.deepEqual(up.refusedListenFilters.at(-1)?.resourceSubscriptions, uris, 'the replacement after the first pause carried both URIs');
    pauses[1]!.end();
    assert.deepEqual(await Promise.all([first, second]), [{}, {}], 'each subscribe is acknowledged');
    assert.equal(up.listenFilters.length, 2, `the server took the GET stream's first listen and one more: ${JSON.stringify(up.listenFilters)}`);
    assert.deepEqual(up.listenFilters[1]?.resourceSubscriptions, uris, 'the listen it took carries both URIs');
    assert.deepEqual(failing(), [], 'no refusal was taken for a failing upstream');
  }, { replacePause });
});

// Once the pause's timer fires, the replacement is asked again and is in flight (session.replacing is unset
// again): a subscribe then opens a listen of its own beside it. The server here has taken that retry, so it
// refuses the new one at its cap of one. That refusal replaces a listen (the one in flight, closed by it) and
// is asked again alone after the short pause, as any refused replacement is: it is not taken for a failing
// upstream (the 1 s pause, doubling), and neither URI is lost.
test('a subscribe made while the retried replacement is in flight: the refusal beside it is asked again alone, both URIs are heard, and no failing upstream is logged', () =>
  withOneSlotHeld(async (up, { client, updated }, gw) => {
    up.refuseListensUntilOneNames(['file:///a']);
    // The retry naming file:///a, taken by the server, unanswered while the second subscribe comes.
    const retry = up.holdListenAnswer(['file:///a']);
    try {
      const first = client.subscribeResource({ uri: 'file:///a' }, { timeout: 15_000 });
      await retry.held;
      const second = client.subscribeResource({ uri: 'file:///b' }, { timeout: 15_000 });
      assert.deepEqual(await Promise.all([first, second]), [{}, {}], 'each subscribe is acknowledged');
    } finally {
      retry.release();
    }
    assert.deepEqual(up.listenFilters[1]?.resourceSubscriptions, ['file:///a'], 'the server took the retry carrying file:///a (held in flight)');
    assert.ok(await waitUntil(() => up.openListens() === 1, 5_000), `one listen open upstream: ${up.openListens()}`);
    assert.deepEqual(up.listenFilters.at(-1)?.resourceSubscriptions, ['file:///a', 'file:///b'], 'the listen kept carries both URIs');
    updated.length = 0;
    up.notify.resourceUpdated('file:///a');
    up.notify.resourceUpdated('file:///b');
    assert.ok(await waitUntil(() => updated.includes('file:///a') && updated.includes('file:///b'), 5_000), `both are heard: ${JSON.stringify(updated)}`);
    const failing = gw.logs.filter((l) => l.msg === 'upstream refused the listen' || l.msg === 'upstream listen failed');
    assert.deepEqual(failing, [], 'no refusal was taken for a failing upstream');
  }));
