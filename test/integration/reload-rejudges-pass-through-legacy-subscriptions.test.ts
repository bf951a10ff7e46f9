// A legacy (2025-11-25) client of one legacy upstream, passed through, across a reload whose egress rules now
// block one of its resource subscriptions. Egress rules do not take the upstream behind the catalog (only
// rules on resources do), so the session stays on the pass-through. Its `resources/subscribe`s were judged
// when made, and are held by the upstream's own session: the client's GET stream, ended or not, is opened
// again on that same session (the v1 SDK client reconnects a GET stream that ends), so ending it would not
// help. Until 5 December the upstream went on watching, and the client hearing of, a URI the egress rules now
// forbid. Now the reload judges the subscriptions the pass-through carried, and unsubscribes the upstream's
// session from one no longer allowed; one still allowed goes on.
// Upstream: the v1 SDK's server over Streamable HTTP (legacy era), which sends updates only of the URIs each
// session subscribed to, as a server does. Client: the v1 SDK's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSubscribableV1Http } from '../fixtures/upstreams/subscribable-v1-http.js';
import { stubResolver } from '../helpers/egress-judged.js';
import { legacySubscriber } from '../helpers/legacy-subscriber.js';
import { startGateway } from '../helpers/gateway.js';
import { blockPartner, keptUpstreams, PARTNER, retirePassThrough, SECRET } from '../helpers/pass-through-reload.js';
import { waitUntil } from '../helpers/stdio-children.js';

const KEPT = 'test://kept';

// `era: legacy` pins the upstream's era: a legacy client is then passed through without a probe, and until
// 5 December the upstream's era stayed unknown, so the pass-through noted none of its sessions' subscriptions.
for (const era of ['auto', 'legacy'] as const) test(`egress rules that now block a URI a legacy session subscribed to on the pass-through unsubscribe the upstream from it (era: ${era})`, { timeout: 60_000 }, async () => {
  const { resolveHost } = stubResolver();
  const upstream = await startSubscribableV1Http();
  const { sessions, publish } = upstream;
  const upstreams = [{ name: 'files', url: upstream.url, era }];
  const gw = await startGateway({ upstreams }, { resolveHost });
  const { client, updated: heard, connect } = legacySubscriber();
  const times = (uri: string): number => heard.filter((u) => u === uri).length;
  try {
    await connect(gw.url);
    await client.subscribeResource({ uri: PARTNER });
    await client.subscribeResource({ uri: KEPT });
    await publish(100, () => times(PARTNER) > 0 && times(KEPT) > 0);
    assert.ok(times(PARTNER) > 0 && times(KEPT) > 0, 'before the reload both URIs\' updates arrive on the GET stream');

    await blockPartner(gw, upstreams);
    assert.deepEqual(keptUpstreams(gw), ['files'], 'the same upstream, still passed through');

    // The reload's judgement runs after it returns: the upstream's session is let go of the URI shortly.
    const subscribedSessions = (): string[][] => sessions.filter((s) => s.subscribed.size > 0).map((s) => [...s.subscribed]);
    await waitUntil(() => !subscribedSessions().some((uris) => uris.includes(PARTNER)), 10_000);
    const partner = times(PARTNER);
    const kept = times(KEPT);
    await publish(100, () => times(KEPT) > kept + 2);
    assert.ok(times(KEPT) > kept, 'the URI still allowed goes on being heard');
    assert.equal(times(PARTNER), partner, 'no update of the blocked URI reaches the client after the reload');
    assert.deepEqual(subscribedSessions(), [[KEPT]], 'the upstream\'s session is unsubscribed from the blocked URI, and only from it');
    await assert.rejects(client.subscribeResource({ uri: PARTNER }), 'subscribing again, the client is judged by the new rules');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

// A reload that retires the pass-through (its first rule on resources takes the upstream behind the catalog):
// the catalog does not know the session, and nothing relays its updates any more, but until 5 December the
// upstream's session went on watching every URI it had subscribed to, the hidden one included.
test('a reload that retires the pass-through has the upstream\'s legacy sessions drop the subscriptions made through it', { timeout: 60_000 }, async () => {
  const upstream = await startSubscribableV1Http();
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams });
  const { client, connect } = legacySubscriber();
  client.onerror = () => {};
  try {
    await connect(gw.url);
    await client.subscribeResource({ uri: SECRET });
    await client.subscribeResource({ uri: KEPT });
    assert.deepEqual(upstream.subscribed(), [KEPT, SECRET]);
    await retirePassThrough(gw, upstreams);
    await waitUntil(() => upstream.subscribed().length === 0, 10_000);
    assert.deepEqual(upstream.subscribed(), [], 'the upstream\'s session no longer watches any URI subscribed through the retired pass-through');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});
