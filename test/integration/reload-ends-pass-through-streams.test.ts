// One upstream, passed through (no rule governs resources), then a reload whose rules hide a resource: a
// rule on resources forces the upstream behind the catalog (AccessPolicy.perCaller). The sessions opened on
// the pass-through are unknown to the catalog, but until 5 December the streams they had open went on: a
// legacy client's GET stream and a modern client's listen kept relaying updates of the URI the new rules
// hide, and the upstream kept watching it. Now the reload ends them as a server ends its own: the GET stream
// ends (its client reconnects and meets the 404), a listen gets its completion result (2026-07-28
// basic/patterns/subscriptions.mdx §Graceful Closure), and no further update of the hidden URI reaches the
// client.
// Upstreams: the v1 SDK's server over Streamable HTTP (legacy era), the v2 SDK's subscribable server (modern
// era), a 2026-07-28 stdio child (lying-listen-stdio.mjs). Clients: the v1 SDK's and the v2 SDK's.

import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { validateConfigObject } from '../../src/config/load.js';
import { startAnnouncingV1Http } from '../fixtures/upstreams/announcing-v1-http.js';
import { startSubscribableModernServer } from '../fixtures/upstreams/subscribable-modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { modernListener } from '../helpers/modern-listener.js';
import { endedCount, endOf, keptUpstreams, retirePassThrough, SECRET } from '../helpers/pass-through-reload.js';
import { waitUntil } from '../helpers/stdio-children.js';


/** Has the modern upstream announce SECRET every 100 ms while `more()`, at most `rounds` times. */
async function announce(upstream: { notify: { resourceUpdated(uri: string): void } }, more: () => boolean, rounds = 100): Promise<void> {
  for (let i = 0; i < rounds && more(); i++) {
    upstream.notify.resourceUpdated(SECRET);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('a legacy client\'s GET stream on the pass-through ends when a reload moves the upstream behind the catalog', { timeout: 60_000 }, async () => {
  const upstream = await startAnnouncingV1Http(SECRET);
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams });
  const client = new V1Client({ name: 'subscriber', version: '1' });
  const heard: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void heard.push(n.params.uri));
  // The client's reconnection meets the 404 (the catalog does not know its session): expected, not a failure.
  client.onerror = () => {};
  try {
    await client.connect(new V1Transport(new URL(gw.url)));
    await client.subscribeResource({ uri: SECRET });
    await upstream.announce(() => heard.length === 0);
    assert.ok(heard.length > 0, 'before the reload its updates arrive on the GET stream');

    await retirePassThrough(gw, upstreams);
    const before = heard.length;
    // Twenty rounds of updates from the upstream session (which still holds the subscription): none arrives.
    await upstream.announce(() => true, 20);
    assert.equal(heard.length, before, 'no update of the hidden URI reaches the client after the reload');
    assert.equal(endedCount(gw), 1, 'the reload ended the GET stream');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a modern client\'s listen on the pass-through gets its completion result when a reload moves the upstream behind the catalog', { timeout: 60_000 }, async () => {
  const upstream = await startSubscribableModernServer();
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams });
  const { client, heard } = modernListener();
  try {
    await client.connect(new V2Transport(new URL(gw.url)));
    const listen = await client.listen({ resourceSubscriptions: [SECRET] });
    assert.deepEqual(listen.honoredFilter.resourceSubscriptions, [SECRET]);
    await announce(upstream, () => heard.length === 0);
    assert.ok(heard.length > 0, 'before the reload its updates arrive');

    await retirePassThrough(gw, upstreams);
    assert.equal(await endOf(listen), 'graceful', 'the listen ends with its completion result');
    assert.equal(endedCount(gw), 1);
    assert.ok(await waitUntil(() => upstream.openListens() === 0, 10_000), 'the upstream\'s listen is closed: it no longer watches the URI');
    const before = heard.length;
    await announce(upstream, () => true, 20);
    assert.equal(heard.length, before, 'no update of the hidden URI reaches the client after the reload');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a modern client\'s listen on a stdio pass-through gets its completion result when a reload moves the upstream behind the catalog', { timeout: 60_000 }, async () => {
  const child = fileURLToPath(new URL('../fixtures/upstreams/lying-listen-stdio.mjs', import.meta.url));
  const upstreams = [{ name: 'child', command: [process.execPath, child] }];
  const gw = await startGateway({ upstreams });
  const { client, heard } = modernListener();
  try {
    await client.connect(new V2Transport(new URL(gw.url)));
    const listen = await client.listen({ resourceSubscriptions: [SECRET] });
    assert.ok(await waitUntil(() => heard.includes(SECRET), 10_000), 'the child\'s update is heard as the listen opens');

    await retirePassThrough(gw, upstreams);
    assert.equal(await endOf(listen), 'graceful', 'the listen ends with its completion result');
    assert.equal(endedCount(gw), 1);
  } finally {
    await client.close().catch(() => {});
    await gw.close();
  }
});

test('a reload that goes on passing the same upstream through leaves its listens open', { timeout: 60_000 }, async () => {
  const upstream = await startSubscribableModernServer();
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams });
  const { client, heard } = modernListener();
  /** Publishes SECRET until one more update than `count` is heard (bounded: 100 rounds). */
  const heardOneMore = async (count: number): Promise<boolean> => {
    await announce(upstream, () => heard.length <= count);
    return heard.length > count;
  };
  try {
    await client.connect(new V2Transport(new URL(gw.url)));
    const listen = await client.listen({ resourceSubscriptions: [SECRET] });
    assert.ok(await heardOneMore(0), 'before the reload its updates arrive');
    // A rate limit rebuilds the configuration but governs no resource: the same upstream is passed through.
    const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams, policy: { rateLimits: [{ id: 'calls', per: 'key', rate: 1000, perSeconds: 60, burst: 1000 }] } }, 'test');
    assert.deepEqual(await gw.gateway.reload(next), []);
    assert.deepEqual(keptUpstreams(gw), ['files']);
    assert.ok(await heardOneMore(heard.length), 'the listen goes on relaying after the reload');
    assert.equal(upstream.openListens(), 1);
    assert.equal(endedCount(gw), undefined, 'no stream was ended');
    await listen.close();
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a reload that builds the upstream anew ends the listens the old one passed through, and the client listens again on the new one', { timeout: 60_000 }, async () => {
  const upstream = await startSubscribableModernServer();
  const gw = await startGateway({ upstreams: [{ name: 'files', url: upstream.url }] });
  const { client, heard } = modernListener();
  try {
    await client.connect(new V2Transport(new URL(gw.url)));
    const listen = await client.listen({ resourceSubscriptions: [SECRET] });
    // A changed header is part of what the upstream is built from (lease-key.ts): a new one is built, and
    // the old one, with its connections, is closed after shutdown.graceMs.
    const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams: [{ name: 'files', url: upstream.url, headers: { 'x-generation': '2' } }] }, 'test');
    assert.deepEqual(await gw.gateway.reload(next), []);
    assert.equal(await endOf(listen), 'graceful', 'the listen on the retired upstream ends with its completion result');
    assert.ok(await waitUntil(() => upstream.openListens() === 0, 10_000), 'its upstream listen is closed');
    const again = await client.listen({ resourceSubscriptions: [SECRET] });
    assert.deepEqual(again.honoredFilter.resourceSubscriptions, [SECRET], 'the new upstream takes the listen');
    await announce(upstream, () => heard.length === 0);
    assert.ok(heard.length > 0, 'and relays its updates');
    await again.close();
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a legacy client\'s GET stream on a stdio pass-through ends, and its reconnection meets the 404', { timeout: 60_000 }, async () => {
  const child = fileURLToPath(new URL('../fixtures/upstreams/subscribable-stdio.mjs', import.meta.url));
  const upstreams = [{ name: 'child', command: [process.execPath, child] }];
  const gw = await startGateway({ upstreams });
  const client = new V1Client({ name: 'subscriber', version: '1' });
  const heard: string[] = [];
  const errors: Array<{ code?: unknown }> = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void heard.push(n.params.uri));
  client.onerror = (err) => void errors.push(err as { code?: unknown });
  try {
    await client.connect(new V1Transport(new URL(gw.url)));
    await client.subscribeResource({ uri: 'test://a' });
    // The child announces the change on the session's GET stream (a notification no request carries).
    for (let i = 0; i < 100 && heard.length === 0; i++) {
      await client.callTool({ name: 'touch', arguments: { name: 'a' } });
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(heard.slice(0, 1), ['test://a'], 'before the reload its updates arrive on the GET stream');

    await retirePassThrough(gw, upstreams);
    // The SDK opens its GET stream again at once when one ends: the catalog does not know the session.
    assert.ok(await waitUntil(() => errors.some((e) => e.code === 404), 10_000), `the GET stream ended and its reconnection is answered 404: ${JSON.stringify(errors)}`);
    assert.equal(endedCount(gw), 1, 'the reload ended the GET stream');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
  }
});
