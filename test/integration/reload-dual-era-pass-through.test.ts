// A dual-era upstream (it answers `server/discover` and also opens legacy `initialize` sessions) on the
// single upstream's pass-through: its era verdict is 'modern' with `alsoLegacy`, and a legacy client of it is
// passed through to a legacy session of the upstream's own, as a legacy upstream's client is. Until
// 5 December the single upstream held the pass-through's listening streams and noted its legacy sessions'
// subscriptions only for a client of the era `knownEra()` gave ('modern' here), so neither happened for that
// client: a reload that forbids a URI it subscribed to left the upstream's session watching it, and a reload
// that retires the pass-through left its GET stream relaying the upstream's session.
// Upstreams: over HTTP, the v1 SDK's server (legacy leg) and the v2 SDK's modern handler on one URL, split by
// the v2 SDK's own `isLegacyRequest`; over stdio (`processes: perSession`, whose legacy clients of a dual-era
// server get children of their own), the v2 SDK's `serveStdio` serving both eras. Client: the v1 SDK's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startSubscribableV1Http } from '../fixtures/upstreams/subscribable-v1-http.js';
import { stubResolver } from '../helpers/egress-judged.js';
import { legacySubscriber } from '../helpers/legacy-subscriber.js';
import { childSubscriptionsWhen, childTool, touchAllUntil } from '../helpers/subscribable-child.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { blockPartner, endedCount, keptUpstreams, PARTNER, retirePassThrough, SECRET } from '../helpers/pass-through-reload.js';
import { gatewaysCheckedForLeakedChildren, waitUntil } from '../helpers/stdio-children.js';

const KEPT = 'test://kept';

const DUAL_ERA_STDIO = fileURLToPath(new URL('../fixtures/upstreams/dual-era-subscribable-stdio.mjs', import.meta.url));
const gateways = gatewaysCheckedForLeakedChildren();

/** The era probe found a dual-era server: modern, also serving legacy clients directly. */
function assertDualEra(gw: TestGateway): void {
  assert.ok(gw.logs.some((l) => l.msg === 'upstream era detected' && l.era === 'modern' && l.alsoLegacy === true), 'the upstream is judged dual-era');
}

test('egress rules that now block a URI a legacy client of a dual-era upstream subscribed to on the pass-through unsubscribe the upstream\'s session from it', { timeout: 60_000 }, async () => {
  const { resolveHost } = stubResolver();
  const upstream = await startSubscribableV1Http({ dualEra: true });
  const { sessions, publish } = upstream;
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams }, { resolveHost });
  const { client, updated: heard, connect } = legacySubscriber();
  const times = (uri: string): number => heard.filter((u) => u === uri).length;
  const subscribedSessions = (): string[][] => sessions.filter((s) => s.subscribed.size > 0).map((s) => [...s.subscribed].sort());
  try {
    await connect(gw.url);
    await client.subscribeResource({ uri: PARTNER });
    await client.subscribeResource({ uri: KEPT });
    assertDualEra(gw);
    assert.deepEqual(subscribedSessions(), [[KEPT, PARTNER].sort()], 'the client\'s subscriptions are the upstream\'s legacy session\'s: it was passed through, not bridged');
    await publish(100, () => times(PARTNER) > 0 && times(KEPT) > 0);
    assert.ok(times(PARTNER) > 0 && times(KEPT) > 0, 'before the reload both URIs\' updates arrive on the GET stream');

    await blockPartner(gw, upstreams);
    assert.deepEqual(keptUpstreams(gw), ['files'], 'the same upstream, still passed through');

    // The reload's judgement runs after it returns: the upstream's session is let go of the URI shortly.
    assert.ok(await waitUntil(() => !subscribedSessions().some((uris) => uris.includes(PARTNER)), 10_000), 'the upstream\'s session got resources/unsubscribe for the blocked URI');
    assert.deepEqual(subscribedSessions(), [[KEPT]], 'the upstream\'s session is unsubscribed from the blocked URI, and only from it');
    const partner = times(PARTNER);
    const kept = times(KEPT);
    await publish(100, () => times(KEPT) > kept + 2);
    assert.ok(times(KEPT) > kept, 'the URI still allowed goes on being heard');
    assert.equal(times(PARTNER), partner, 'no update of the blocked URI reaches the client after the reload');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a legacy client\'s GET stream on a dual-era upstream\'s pass-through ends when a reload moves the upstream behind the catalog', { timeout: 60_000 }, async () => {
  const upstream = await startSubscribableV1Http({ dualEra: true });
  const { publish } = upstream;
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams });
  const { client, updated: heard, connect } = legacySubscriber();
  // The client's reconnection meets the 404 (the catalog does not know its session): expected, not a failure.
  client.onerror = () => {};
  try {
    await connect(gw.url);
    await client.subscribeResource({ uri: SECRET });
    assertDualEra(gw);
    await publish(100, () => heard.length > 0);
    assert.ok(heard.length > 0, 'before the reload its updates arrive on the GET stream');

    // A rule on resources takes the upstream behind the catalog: the pass-through is retired.
    await retirePassThrough(gw, upstreams);
    assert.equal(endedCount(gw), 1, 'the reload ended the GET stream');
    const before = heard.length;
    // Twenty rounds of updates from the upstream's session (unless it dropped the subscription): none arrives.
    let rounds = 0;
    await publish(100, () => ++rounds > 20);
    assert.equal(heard.length, before, 'no update of the hidden URI reaches the client after the reload');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('processes: perSession: egress rules that now block a URI a legacy client of a dual-era stdio server subscribed to have its child drop it', { timeout: 60_000 }, async () => {
  const { resolveHost } = stubResolver();
  const upstreams = [{ name: 'subs', command: [process.execPath, DUAL_ERA_STDIO], processes: 'perSession' }];
  const gw = await startGateway({ upstreams }, { resolveHost });
  gateways.push(gw);
  const { client, updated: heard, connect } = legacySubscriber();
  const times = (uri: string): number => heard.filter((u) => u === uri).length;
  try {
    await connect(gw.url);
    await client.subscribeResource({ uri: PARTNER });
    await client.subscribeResource({ uri: KEPT });
    assert.ok(gw.logs.some((l) => l.msg === 'upstream era detected' && l.era === 'modern'), 'the server answered the modern discover');
    // Bridged, the subscribes would have become a listen on the modern face, and no child would hold them.
    assert.deepEqual(await childTool(client, 'subscribed'), [KEPT, PARTNER].sort(), 'the client\'s own child holds its subscriptions: it was passed through');
    await touchAllUntil(client, () => times(PARTNER) > 0 && times(KEPT) > 0);
    assert.ok(times(PARTNER) > 0 && times(KEPT) > 0, 'before the reload both URIs\' updates arrive');

    await blockPartner(gw, upstreams);
    assert.deepEqual(keptUpstreams(gw), ['subs'], 'the same upstream and children, still passed through');

    // The reload's judgement runs after it returns: the child is let go of the URI shortly.
    const held = await childSubscriptionsWhen(client, (uris) => !uris.includes(PARTNER));
    assert.deepEqual(held, [KEPT], 'the child got resources/unsubscribe for the blocked URI, and only for it');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
  }
});
