// A legacy client's GET stream, in front of a modern upstream at its cap of listens (the v2 SDK's
// `maxSubscriptions`), whose replacement listen the server keeps refusing. A refused replacement is asked
// again alone after a short pause, at most REPLACE_TRIES (3) times, and past them it is a failing listen (a 1 s
// pause, doubling). Until 5 December a resources/subscribe made while a retried replacement was in flight
// opened a listen beside it whose refusal started the tries again: up to 3 more per subscribe, so a client
// that kept subscribing kept the bridge asking every few hundred milliseconds without end. Now the tries are
// counted per session until a listen is acknowledged, and a subscribe that joins does not reset them.
// The bridge's pauses are held here until the test ends them (GatewayOptions.replacePause), and the server
// holds the refusal of the first retry, so that the second subscribe comes while that retry is in flight.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSubscribableModernServer } from '../fixtures/upstreams/subscribable-modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import type { GatewayOptions } from '../../src/gateway.js';
import { legacySubscriber } from '../helpers/legacy-subscriber.js';
import { waitUntil } from '../helpers/stdio-children.js';

const GAVE_UP = 'upstream refused the listen';

test('a subscribe made while a retried replacement is in flight does not start the replacement\'s tries again', { timeout: 60_000 }, async () => {
  const pauses: Array<{ end: () => void; cancelled: boolean }> = [];
  const replacePause: GatewayOptions['replacePause'] = (resume) => {
    const pause = { end: () => void (pause.cancelled || resume()), cancelled: false };
    pauses.push(pause);
    return () => void (pause.cancelled = true);
  };
  const up = await startSubscribableModernServer({ maxSubscriptions: 1 });
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] }, { replacePause });
  const { client, connect } = legacySubscriber();
  const gaveUp = (): boolean => gw.logs.some((l) => l.msg === GAVE_UP);
  let release = (): void => {};
  try {
    await connect(gw.url);
    assert.ok(await waitUntil(() => up.openListens() === 1, 5_000), 'the GET stream\'s listen holds the one slot');
    // From now on the server refuses every listen (none will name this URI).
    up.refuseListensUntilOneNames(['file:///never']);
    // Each subscribe waits for an acknowledgment that never comes, and is refused after its wait: not awaited.
    client.subscribeResource({ uri: 'file:///a' }, { timeout: 30_000 }).catch(() => {});
    assert.ok(await waitUntil(() => pauses.length === 1, 10_000), 'the replacement carrying file:///a was refused, and its first pause began');

    const retry = up.holdNextRefusal();
    release = retry.release;
    pauses[0]!.end();
    await retry.held;
    client.subscribeResource({ uri: 'file:///b' }, { timeout: 30_000 }).catch(() => {});
    assert.ok(await waitUntil(() => pauses.length === 2, 10_000), 'the listen the second subscribe opened beside the retry was refused, and a pause began');
    release();

    // Every pause is ended as it begins, until the bridge takes the refusals for a failing listen.
    for (let ended = 1; ended < 10 && !gaveUp(); ended++) {
      assert.ok(await waitUntil(() => pauses.length > ended || gaveUp(), 10_000), `pause ${ended + 1} began, or the bridge gave up`);
      if (pauses.length > ended) pauses[ended]!.end();
    }
    assert.ok(await waitUntil(gaveUp, 10_000), 'past its tries the refused replacement is a failing listen');
    assert.equal(pauses.length, 3, 'three replacement pauses in all (REPLACE_TRIES), the second subscribe\'s included');
    // The GET stream's listen is not refused: the first subscribe's replacement, its retry (held, then closed by
    // the second subscribe's listen), that listen, and two more tries.
    assert.equal(up.refusedListenFilters.length, 5, `the listens the server refused: ${JSON.stringify(up.refusedListenFilters)}`);
  } finally {
    release();
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
  }
});
