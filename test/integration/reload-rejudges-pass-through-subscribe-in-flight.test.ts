// A legacy (2025-11-25) client of one legacy upstream, passed through, whose `resources/subscribe` of a URI
// the old egress rules allow is on its way while a reload that KEEPS the pass-through (new egress rules block
// the URI's host; egress rules do not take the upstream behind the catalog) judges the subscriptions noted:
// held by the upstream before it subscribes (the reload's drop reaches the upstream first), or still in the
// old configuration's pipeline (the egress stage waiting for its URI's host to resolve; noted only after the
// reload's judgement). Until 5 December either then stayed subscribed upstream until some later reload. Now
// the subscribe's answer, carried by a configuration older than the one whose rules last judged the notes,
// has its URI judged under those rules, and the upstream's session is asked to drop it.
// Upstream: the v1 SDK's server over Streamable HTTP, holding subscribes on purpose. Client: the v1 SDK's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSubscribableV1Http } from '../fixtures/upstreams/subscribable-v1-http.js';
import { stubResolver } from '../helpers/egress-judged.js';
import { startGateway } from '../helpers/gateway.js';
import { subscribeInPipeline } from '../helpers/subscribe-in-pipeline.js';
import { legacySubscriber } from '../helpers/legacy-subscriber.js';
import { blockPartner, keptUpstreams, PARTNER } from '../helpers/pass-through-reload.js';
import { waitUntil } from '../helpers/stdio-children.js';

const KEPT = 'test://kept';
/** A URI the new rules still allow. */
const OTHER = 'test://other';

test('a subscribe held upstream while a reload that keeps the pass-through judges the notes is dropped once answered, when the new rules forbid it', { timeout: 60_000 }, async () => {
  let release = (): void => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  let releaseOther = (): void => {};
  const heldOther = new Promise<void>((resolve) => (releaseOther = resolve));
  let holding = 0;
  const unsubscribes: string[] = [];
  const upstream = await startSubscribableV1Http({
    holdSubscribe: (uri) => (uri === PARTNER ? (holding++, held) : uri === OTHER ? (holding++, heldOther) : undefined),
    refuseUnsubscribe: (uri) => (unsubscribes.push(uri), false),
  });
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams }, { resolveHost: stubResolver().resolveHost });
  const { client, connect } = legacySubscriber();
  client.onerror = () => {};
  try {
    await connect(gw.url);
    await client.subscribeResource({ uri: KEPT });
    const late = client.subscribeResource({ uri: PARTNER });
    const other = client.subscribeResource({ uri: OTHER });
    await waitUntil(() => holding === 2, 5_000);
    assert.equal(holding, 2, 'the upstream holds both subscribes before subscribing');

    await blockPartner(gw, upstreams);
    assert.deepEqual(keptUpstreams(gw), ['files'], 'the same upstream, still passed through');
    await waitUntil(() => unsubscribes.length >= 1, 5_000);
    assert.deepEqual(unsubscribes, [PARTNER], 'the reload asked the upstream to drop the noted URI, before it subscribed');

    // The allowed one is answered first: its answer is judged before the forbidden one is even subscribed.
    releaseOther();
    await other;
    release();
    await late;
    await waitUntil(() => unsubscribes.length >= 2, 5_000);
    assert.deepEqual(unsubscribes, [PARTNER, PARTNER], 'the forbidden subscribe\'s answer had the upstream asked to drop its URI again; the allowed one\'s did not');
    assert.deepEqual(upstream.subscribed(), [KEPT, OTHER].sort(), 'the upstream\'s session watches only the URIs the new rules allow');
  } finally {
    release();
    releaseOther();
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a subscribe still in the old configuration\'s pipeline while a reload that keeps the pass-through judges the notes is dropped once answered, when the new rules forbid it', { timeout: 60_000 }, async () => {
  // The old egress stage resolves the URI's host before the call goes on: held there until the reload is done.
  const { gw, upstream, upstreams, unsubscribes, late, release, close } = await subscribeInPipeline(KEPT);
  try {
    // The reload's judgement of the notes starts as it returns, before the subscribe is noted.
    await blockPartner(gw, upstreams);
    assert.deepEqual(keptUpstreams(gw), ['files'], 'the same upstream, still passed through');

    release();
    await late;
    await waitUntil(() => unsubscribes.length >= 1, 5_000);
    assert.deepEqual(unsubscribes, [PARTNER], 'the subscribe\'s answer had the upstream asked to drop its URI');
    assert.deepEqual(upstream.subscribed(), [KEPT], 'the upstream\'s session watches only the URI the new rules allow');
  } finally {
    await close();
  }
});
