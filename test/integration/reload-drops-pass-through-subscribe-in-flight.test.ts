// A legacy (2025-11-25) client of one legacy upstream, passed through, whose `resources/subscribe` is on its
// way while a reload retires the pass-through (its first rule on resources takes the upstream behind the
// catalog): held by the upstream before it subscribes, or still in the old configuration's pipeline (the
// egress stage waiting for its URI's host to resolve). The reload asks the upstream's session to drop every
// subscription noted; the first subscribe's drop reaches the upstream before that subscribe is done, the
// second is noted only after the drops. Until 5 December either then stayed subscribed upstream until some
// later reload. Now the subscribe's answer, once it comes, finds the pass-through retired, and the upstream's
// session is asked to drop that URI then.
// Upstream: the v1 SDK's server over Streamable HTTP, holding one subscribe on purpose. Client: the v1 SDK's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSubscribableV1Http } from '../fixtures/upstreams/subscribable-v1-http.js';
import { startGateway } from '../helpers/gateway.js';
import { subscribeInPipeline } from '../helpers/subscribe-in-pipeline.js';
import { legacySubscriber } from '../helpers/legacy-subscriber.js';
import { PARTNER, retirePassThrough } from '../helpers/pass-through-reload.js';
import { waitUntil } from '../helpers/stdio-children.js';

const KEPT = 'test://kept';
const LATE = 'test://late';

test('a subscribe on its way while a reload retires the pass-through is dropped upstream once it is answered', { timeout: 60_000 }, async () => {
  let release = (): void => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  let holding = false;
  const unsubscribes: string[] = [];
  const upstream = await startSubscribableV1Http({
    holdSubscribe: (uri) => (uri === LATE ? ((holding = true), held) : undefined),
    refuseUnsubscribe: (uri) => (unsubscribes.push(uri), false),
  });
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams });
  const { client, connect } = legacySubscriber();
  client.onerror = () => {};
  try {
    await connect(gw.url);
    await client.subscribeResource({ uri: KEPT });
    const late = client.subscribeResource({ uri: LATE });
    await waitUntil(() => holding, 5_000);
    assert.ok(holding, 'the upstream holds the subscribe before subscribing');

    await retirePassThrough(gw, upstreams);
    await waitUntil(() => unsubscribes.length >= 2, 5_000);
    assert.deepEqual([...unsubscribes].sort(), [LATE, KEPT].sort(), 'the retiring reload asked the upstream to drop both, the held subscribe\'s URI before it subscribed');
    assert.deepEqual(upstream.subscribed(), [], 'nothing subscribed upstream for now');

    release();
    await late;
    await waitUntil(() => unsubscribes.length >= 3, 5_000);
    assert.deepEqual(unsubscribes.slice(2), [LATE], 'the subscribe\'s answer had the upstream asked to drop its URI again');
    assert.deepEqual(upstream.subscribed(), [], 'the upstream\'s session no longer watches the URI the late subscribe added');
  } finally {
    release();
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a subscribe still in the old configuration\'s pipeline while a reload retires the pass-through is dropped upstream once it is answered', { timeout: 60_000 }, async () => {
  // The egress stage resolves the URI's host before the call goes on: held there until the reload is done.
  const { gw, upstream, upstreams, unsubscribes, late, release, close } = await subscribeInPipeline(KEPT);
  try {
    await retirePassThrough(gw, upstreams);
    await waitUntil(() => unsubscribes.length >= 1, 5_000);
    assert.deepEqual(unsubscribes, [KEPT], 'the retiring reload asked the upstream to drop what was noted: not yet the held subscribe');

    release();
    await late;
    await waitUntil(() => unsubscribes.length >= 2, 5_000);
    assert.deepEqual(unsubscribes, [KEPT, PARTNER], 'the subscribe\'s answer had the upstream asked to drop its URI');
    assert.deepEqual(upstream.subscribed(), [], 'the upstream\'s session no longer watches the URI the late subscribe added');
  } finally {
    await close();
  }
});
