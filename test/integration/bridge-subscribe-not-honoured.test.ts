// A legacy client's resources/subscribe, in front of a modern upstream, becomes a URI in the filter of the
// upstream subscriptions/listen that feeds its GET stream (GATEWAY-REQUIREMENTS §16.2 "Subscriptions ⇄ GET
// stream"). The listen's acknowledgment names only what the server agreed to honour (2026-07-28
// basic/patterns/subscriptions.mdx §Acknowledgment: "Notification types the server does not support are
// omitted"), and a server may refuse the listen itself (the v2 SDK past its `maxSubscriptions`). Until
// 5 December the subscribe was answered `{}` at once, whatever the upstream then did with it: the client
// believed it was subscribed and heard nothing. Now the subscribe waits (5 s at most) for the acknowledgment
// of a listen that carries its URI, and a URI left out (or never acknowledged) is an error the 2025-11-25
// client sees (server/resources.mdx §Error Handling), and leaves the session's subscriptions.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { startAcknowledgingUpstream } from '../fixtures/upstreams/acknowledging-upstream.js';
import { startSubscribableModernServer } from '../fixtures/upstreams/subscribable-modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { legacySubscriber } from '../helpers/legacy-subscriber.js';
import { waitUntil } from '../helpers/stdio-children.js';

test('a URI the upstream listen leaves out of its acknowledgment is a subscribe error, not {}', async () => {
  // It refuses one URI.
  const up = await startAcknowledgingUpstream((asked) => ({ ...asked, ...(asked.resourceSubscriptions ? { resourceSubscriptions: asked.resourceSubscriptions.filter((u) => u !== 'file:///refused') } : {}) }));
  const { filters } = up;
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  const { client, connect } = legacySubscriber();
  try {
    await connect(gw.url);
    // The client's GET stream is open once its listen (tools list changes) went up.
    assert.ok(await waitUntil(() => filters.length === 1, 5_000), 'the GET stream opened a listen');
    assert.deepEqual(await client.subscribeResource({ uri: 'file:///ok' }), {}, 'an honoured URI is subscribed');
    const refused = await client.subscribeResource({ uri: 'file:///refused' }).then(() => undefined, (err: unknown) => err);
    assert.ok(refused instanceof McpError, `the URI the server left out was answered ${JSON.stringify(refused)}`);
    assert.equal(refused.code, -32602);
    assert.match(refused.message, /file:\/\/\/refused/);
    // It left the session's subscriptions: the next listen does not ask for it again.
    await client.subscribeResource({ uri: 'file:///other' });
    assert.deepEqual(filters.at(-1), ['file:///ok', 'file:///other']);
  } finally {
    await client.close();
    await gw.close();
    await up.close();
  }
});

test('a subscribe whose listen the v2 SDK server keeps refusing (past its maxSubscriptions) is an error within 5 s, not {}', async () => {
  // A real v2 SDK server declaring resources.subscribe, with room for one listen; every listen asked, taken
  // or refused, is in its listenFilters.
  const up = await startSubscribableModernServer({ maxSubscriptions: 1 });
  const listensAsked = () => up.listenFilters.length;
  const gw = await startGateway({ upstreams: [{ name: 'm', url: up.url }] });
  const first = legacySubscriber('first');
  const second = legacySubscriber('second');
  try {
    await first.connect(gw.url);
    assert.ok(await waitUntil(() => listensAsked() >= 1, 5_000), 'the first GET stream opened a listen');
    // Its new filter's listen opens before the old one closes, so the server refuses it once; the listen
    // asked again once the old one is closed carries the URI, and its acknowledgment answers the subscribe.
    assert.deepEqual(await first.client.subscribeResource({ uri: 'file:///a' }), {}, 'the subscription the server took');
    const before = listensAsked();
    await second.connect(gw.url);
    assert.ok(await waitUntil(() => listensAsked() > before, 5_000), 'the second GET stream asked for a listen');
    // The client gives up after 15 s with its own timeout error (-32001): -32603 can only be the gateway's answer.
    const refused = await second.client.subscribeResource({ uri: 'file:///b' }, { timeout: 15_000 }).then(() => undefined, (err: unknown) => err);
    assert.ok(refused instanceof McpError, `the subscribe the server never took was answered ${JSON.stringify(refused)}`);
    assert.equal(refused.code, -32603, 'answered by the gateway, not left to the client\'s timeout');
  } finally {
    await second.client.close();
    await first.client.close();
    await gw.close();
    await up.close();
  }
});
