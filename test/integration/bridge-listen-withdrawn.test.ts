// A legacy client's resources/subscribe, in front of a modern upstream, is a URI in the filter of the upstream
// subscriptions/listen that feeds its GET stream, and the subscribe is answered `{}` once a listen's
// acknowledgment names the URI (bridge-subscribe-not-honoured.test.ts). Each later change of filter opens a new
// listen, whose acknowledgment may name less (2026-07-28 basic/patterns/subscriptions.mdx §Acknowledgment: what
// the server does not honour is omitted). Until 5 December a URI already confirmed to the client and left out
// of a later acknowledgment stayed in the session's set: the client believed it was subscribed, and never heard
// of it again. 2025-11-25 has no unsubscribe from the server: the client is now sent one last
// notifications/resources/updated for it (so that it reads again, and may subscribe again), and the URI leaves
// the session's set, so that the next listen no longer asks for it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startAcknowledgingUpstream } from '../fixtures/upstreams/acknowledging-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { legacySubscriber } from '../helpers/legacy-subscriber.js';
import { waitUntil } from '../helpers/stdio-children.js';

test('a URI confirmed to the client and left out of a later listen acknowledgment is told once, and leaves the session', async () => {
  // Once a listen asks for file:///b, it no longer honours file:///a.
  const up = await startAcknowledgingUpstream((asked) => {
    const uris = asked.resourceSubscriptions;
    return uris?.includes('file:///b') ? { ...asked, resourceSubscriptions: uris.filter((u) => u !== 'file:///a') } : asked;
  });
  const { filters } = up;
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  const { client, updated, connect } = legacySubscriber();
  try {
    await connect(gw.url);
    assert.ok(await waitUntil(() => filters.length === 1, 5_000), 'the GET stream opened a listen');
    assert.deepEqual(await client.subscribeResource({ uri: 'file:///a' }), {}, 'file:///a was honoured at first');
    assert.deepEqual(await client.subscribeResource({ uri: 'file:///b' }), {}, 'file:///b is honoured');
    assert.deepEqual(filters.at(-1), ['file:///a', 'file:///b'], 'the listen that dropped file:///a was asked for both');
    assert.ok(await waitUntil(() => updated.includes('file:///a'), 5_000), `the client was told of the dropped file:///a: ${JSON.stringify(updated)}`);
    assert.deepEqual(updated, ['file:///a'], 'only the dropped URI, once');
    // It left the session's subscriptions: the next listen no longer asks for it.
    assert.deepEqual(await client.subscribeResource({ uri: 'file:///c' }), {});
    assert.deepEqual(filters.at(-1), ['file:///b', 'file:///c']);
    assert.deepEqual(updated, ['file:///a'], 'nothing more was withdrawn');
  } finally {
    await client.close();
    await gw.close();
    await up.close();
  }
});
