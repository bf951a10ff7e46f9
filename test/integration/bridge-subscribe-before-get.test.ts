// A legacy client's resources/subscribe in front of a modern upstream becomes a URI in the filter of the
// upstream subscriptions/listen that feeds the client's GET stream (GATEWAY-REQUIREMENTS §16.2
// "Subscriptions ⇄ GET stream"). A client may subscribe before that stream is open: the v1 SDK client opens
// its GET only after `notifications/initialized`, without waiting for it, so a subscribe sent right after
// connect may overtake it. Until 5 December such a subscribe was `{}` at once, asked of nobody: the URI was
// carried by the listen the GET stream opened later, but a server that would not honour it (past its
// `maxSubscriptions`, here) left the client believing it was subscribed, hearing nothing. Now a short listen
// asks the server for the URI and ends at its acknowledgment, which answers the subscribe; the GET stream's
// listen carries the URI when it opens. The clients are the official v1 SDK's, the server the v2 SDK's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startSubscribableModernServer } from '../fixtures/upstreams/subscribable-modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { heldGetStream } from '../helpers/held-get-stream.js';
import { waitUntil } from '../helpers/stdio-children.js';

test('a subscribe made before the GET stream opens is answered by the server\'s acknowledgment, and its updates reach the stream once it opens', async () => {
  const up = await startSubscribableModernServer();
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  const get = heldGetStream();
  const client = new Client({ name: 'early-subscriber', version: '1' });
  const updated: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void updated.push(n.params.uri));
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { fetch: get.fetch }));
    assert.deepEqual(await client.subscribeResource({ uri: 'file:///watched' }), {});
    assert.equal(get.opened(), false, 'the subscribe was answered before the client had a GET stream');
    assert.deepEqual(up.listenFilters, [{ resourceSubscriptions: ['file:///watched'] }], 'the server was asked for the URI, and for nothing else');
    assert.ok(await waitUntil(() => up.openListens() === 0, 5_000), 'the listen that asked holds no stream once acknowledged');
    get.open();
    assert.ok(await waitUntil(() => up.openListens() === 1 && (up.listenFilters.at(-1)?.resourceSubscriptions as string[] | undefined)?.includes('file:///watched') === true, 5_000), `the GET stream's listen carries the URI: ${JSON.stringify(up.listenFilters)}`);
    // The listen's acknowledgment has gone by before the notifier reaches it (the SDK writes it as the stream starts).
    up.notify.resourceUpdated('file:///watched');
    assert.ok(await waitUntil(() => updated.length > 0, 5_000), 'the update reached the client');
    assert.deepEqual(updated, ['file:///watched']);
  } finally {
    get.open();
    await client.close();
    await gw.close();
    await up.close();
  }
});

test('a subscribe made before the GET stream opens, which the server at its maxSubscriptions cannot carry, is an error, not {}', async () => {
  const up = await startSubscribableModernServer({ maxSubscriptions: 1 });
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  // Another client's GET stream holds the server's one listen.
  const other = new Client({ name: 'other', version: '1' });
  const get = heldGetStream();
  const client = new Client({ name: 'early-subscriber', version: '1' });
  try {
    await other.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
    assert.ok(await waitUntil(() => up.openListens() === 1, 5_000), 'the other client\'s listen is open');
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { fetch: get.fetch }));
    const refused = await client.subscribeResource({ uri: 'file:///watched' }).then(() => undefined, (err: unknown) => err);
    assert.ok(refused instanceof McpError, `the subscribe the server could not carry was answered ${JSON.stringify(refused)}`);
    assert.equal(refused.code, -32603);
    assert.match(refused.message, /Subscription limit reached/);
    assert.match(refused.message, /file:\/\/\/watched/);
    // Once the server has room, the same subscribe is taken.
    await other.close();
    assert.ok(await waitUntil(() => up.openListens() === 0, 5_000), 'the other client\'s listen ended');
    assert.deepEqual(await client.subscribeResource({ uri: 'file:///watched' }), {});
  } finally {
    get.open();
    await client.close();
    await other.close();
    await gw.close();
    await up.close();
  }
});
