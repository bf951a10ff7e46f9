// A modern client's listen passed through to one 2026-07-28 upstream, across a reload whose egress rules now
// block one of its resource subscriptions. Egress rules do not take the upstream behind the catalog (only
// rules on resources do), so the listen stays on the pass-through; it was judged when it opened (the egress
// stage's withheld URIs) and its filter was settled by its acknowledgment (2026-07-28
// basic/patterns/subscriptions.mdx §Acknowledgment). Until 5 December it went on as it was: the upstream
// went on watching, and the client hearing of, a URI the egress rules now forbid. Now, as for the catalog's
// listens (reload-ends-modern-listens.test.ts), it ends with its completion result (§Graceful Closure), and
// a listen whose URIs are all still allowed goes on.
// Upstreams: the v2 SDK's subscribable server over Streamable HTTP; the v1 SDK's (subscribable-v1-http.ts),
// behind the modern-client bridge. Client: the v2 SDK's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { startSubscribableModernServer } from '../fixtures/upstreams/subscribable-modern-server.js';
import { startSubscribableV1Http } from '../fixtures/upstreams/subscribable-v1-http.js';
import { stubResolver } from '../helpers/egress-judged.js';
import { startGateway } from '../helpers/gateway.js';
import { modernListener } from '../helpers/modern-listener.js';
import { blockPartner, endOf, keptUpstreams, PARTNER } from '../helpers/pass-through-reload.js';
import { waitUntil } from '../helpers/stdio-children.js';

const KEPT = 'test://kept';

test('egress rules that now block a subscribed URI end the pass-through listen holding it', { timeout: 60_000 }, async () => {
  const { resolveHost } = stubResolver();
  const upstream = await startSubscribableModernServer();
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams }, { resolveHost });
  const { client, heard } = modernListener();
  /** Publishes `uri` until it has been heard `count` times (bounded: 100 rounds). */
  const heardTimes = async (uri: string, count: number): Promise<boolean> => {
    for (let i = 0; i < 100 && heard.filter((u) => u === uri).length < count; i++) {
      upstream.notify.resourceUpdated(uri);
      await new Promise((r) => setTimeout(r, 100));
    }
    return heard.filter((u) => u === uri).length >= count;
  };
  try {
    await client.connect(new V2Transport(new URL(gw.url)));
    const both = await client.listen({ resourceSubscriptions: [PARTNER, KEPT] });
    const keptOnly = await client.listen({ resourceSubscriptions: [KEPT] });
    assert.deepEqual([...both.honoredFilter.resourceSubscriptions!].sort(), [KEPT, PARTNER].sort());
    assert.ok(await heardTimes(PARTNER, 1), 'before the reload its updates arrive');

    await blockPartner(gw, upstreams);
    assert.deepEqual(keptUpstreams(gw), ['files'], 'the same upstream, still passed through');

    assert.equal(await endOf(both), 'graceful', 'the listen holding the URI ends with its completion result');
    await waitUntil(() => upstream.openListens() === 1, 10_000);
    assert.equal(upstream.openListens(), 1, 'the upstream no longer watches the URI; the other listen stays');
    const kept = heard.filter((u) => u === KEPT).length;
    assert.ok(await heardTimes(KEPT, kept + 1), 'the listen whose URIs are all allowed goes on');
    await keptOnly.close();
    const again = await client.listen({ resourceSubscriptions: [PARTNER, KEPT] });
    assert.deepEqual(again.honoredFilter.resourceSubscriptions, [KEPT], 'listening again, the client is judged by the new rules');
    await again.close();
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

// The same listen served by the upstream's modern-client bridge (a legacy-only upstream: the bridge holds a
// legacy session of its own and subscribes it to the listen's URIs): until 5 December SingleUpstream held only
// the listens of a client of the upstream's own era, so a bridged one was never judged again and went on
// hearing of the URI the egress rules now forbid.
test('egress rules that now block a subscribed URI end a listen bridged to a legacy upstream holding it', { timeout: 60_000 }, async () => {
  const { resolveHost } = stubResolver();
  const upstream = await startSubscribableV1Http();
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams }, { resolveHost });
  const { client, heard } = modernListener();
  const times = (uri: string): number => heard.filter((u) => u === uri).length;
  try {
    await client.connect(new V2Transport(new URL(gw.url)));
    const both = await client.listen({ resourceSubscriptions: [PARTNER, KEPT] });
    assert.deepEqual([...both.honoredFilter.resourceSubscriptions!].sort(), [KEPT, PARTNER].sort());
    await upstream.publish(100, () => times(PARTNER) > 0);
    assert.ok(times(PARTNER) > 0, 'before the reload the bridge relays the upstream session\'s updates');

    await blockPartner(gw, upstreams);
    assert.deepEqual(keptUpstreams(gw), ['files'], 'the same upstream, still passed through');

    assert.equal(await endOf(both), 'graceful', 'the bridged listen holding the URI ends with its completion result');
    const partner = times(PARTNER);
    await upstream.publish(20);
    assert.equal(times(PARTNER), partner, 'no update of the blocked URI reaches the client after the reload');
    const again = await client.listen({ resourceSubscriptions: [PARTNER, KEPT] });
    assert.deepEqual(again.honoredFilter.resourceSubscriptions, [KEPT], 'listening again, the client is judged by the new rules');
    await again.close();
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});
