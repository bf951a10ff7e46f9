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
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startSubscribableModernServer } from '../fixtures/upstreams/subscribable-modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/stdio-children.js';

test('a client holding the server\'s one listen slot subscribes to four URIs in a row: each is taken, and each is heard', async () => {
  const up = await startSubscribableModernServer({ maxSubscriptions: 1 });
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  const client = new Client({ name: 'subscriber', version: '1' });
  const updated: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void updated.push(n.params.uri));
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
    assert.ok(await waitUntil(() => up.openListens() === 1, 5_000), 'the GET stream\'s listen holds the one slot');
    const uris = ['file:///a', 'file:///b', 'file:///c', 'file:///d'];
    for (const uri of uris) assert.deepEqual(await client.subscribeResource({ uri }, { timeout: 15_000 }), {}, `subscribed to ${uri}`);
    assert.ok(await waitUntil(() => up.openListens() === 1, 5_000), 'one listen open upstream');
    assert.deepEqual(up.listenFilters.at(-1)?.resourceSubscriptions, uris, 'the open listen carries every URI');
    updated.length = 0;
    up.notify.resourceUpdated('file:///d');
    assert.ok(await waitUntil(() => updated.includes('file:///d'), 5_000), 'the last URI subscribed is heard');
  } finally {
    await client.close();
    await gw.close();
    await up.close();
  }
});

test('a change published while a listen at the cap is replaced is not lost: the client is told to read the resource again', async () => {
  const up = await startSubscribableModernServer({ maxSubscriptions: 1 });
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  const client = new Client({ name: 'subscriber', version: '1' });
  const updated: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void updated.push(n.params.uri));
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
    assert.ok(await waitUntil(() => up.openListens() === 1, 5_000), 'the GET stream\'s listen holds the one slot');
    assert.deepEqual(await client.subscribeResource({ uri: 'file:///a' }, { timeout: 15_000 }), {});
    assert.ok(await waitUntil(() => up.openListens() === 1, 5_000), 'the listen carrying file:///a is open');
    // file:///a changes just as the listen that carries it closes, before its replacement is acknowledged.
    up.onceListenCloses('file:///a', () => up.notify.resourceUpdated('file:///a'));
    updated.length = 0;
    assert.deepEqual(await client.subscribeResource({ uri: 'file:///b' }, { timeout: 15_000 }), {});
    assert.ok(await waitUntil(() => updated.includes('file:///a'), 5_000), `the change to file:///a was told: ${JSON.stringify(updated)}`);
  } finally {
    await client.close();
    await gw.close();
    await up.close();
  }
});
