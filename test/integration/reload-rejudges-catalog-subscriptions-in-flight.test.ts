// A listen (modern client) or a resources/subscribe (legacy client) served through the CATALOG (one 2026-07-28
// upstream under `tools.naming.prefix: always`, which is served through the catalog), naming a URI the old
// egress rules allow, on its way while a reload (new egress rules block the URI's host) judges the catalog's
// listens (OpenListens.rejudge) and the legacy sessions' subscriptions (LegacyClientBridge.rejudgeSubscriptions):
// still in the old configuration's pipeline (the egress stage waiting for the URI's host to resolve), or, for
// the listen, awaiting the upstream's acknowledgment (it holds no URI before it). The judgement did not see
// either. Until 5 December the listen then went on, and the session kept the URI in the listen it has the
// upstream hold, the upstream watching a URI the new rules forbid, until a later reload. Now a listen or a
// subscribe that arrived before the latest judgement began is judged under its rules as its URIs are known
// (the listen's acknowledgment, the subscribe's arrival at the bridge): the listen ends with its completion
// result, the subscription is dropped as the reload drops one. A legacy subscribe awaiting the
// acknowledgment of the listen carrying it was never a gap (its URI is in the session's set as the reload
// judges it): kept to show it.
// Upstream: the v2 SDK's subscribable server over Streamable HTTP. Clients: the v2 SDK's and the v1 SDK's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { validateConfigObject } from '../../src/config/load.js';
import { startSubscribableModernServer, type SubscribableModernServer } from '../fixtures/upstreams/subscribable-modern-server.js';
import { stallingResolver, stubResolver } from '../helpers/egress-judged.js';
import { startGateway } from '../helpers/gateway.js';
import { legacySubscriber } from '../helpers/legacy-subscriber.js';
import { modernListener } from '../helpers/modern-listener.js';
import { waitUntil } from '../helpers/stdio-children.js';

const KEPT = 'test://kept';
/** A fetched scheme's URI, resolving to a public address (EGRESS_DNS): allowed by the default egress rules. */
const PARTNER = 'https://docs.partner.example/a';
/** Tool names always prefixed: one upstream served through the catalog, not passed through. */
const TOOLS = { naming: { prefix: 'always' } };

/** The reloaded config: its egress rules now block PARTNER's host. */
function blockingPartner(upstreams: unknown[]) {
  return validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams, tools: TOOLS, policy: { egress: [{ id: 'no-partner', tools: ['*'], deny: { hosts: ['docs.partner.example'] } }] } }, 'test');
}

/** Waits (5 s at most) until `done`; the assertion after it says what did not happen. */
const until = (done: () => boolean): Promise<boolean> => waitUntil(done, 5_000);

/** How a listen still opening ended: 'graceful' on its completion result (before or after its acknowledgment); 'open' if not within 10 s. */
async function endOfOpening(opening: Promise<Awaited<ReturnType<V2Client['listen']>>>): Promise<string> {
  let listen: Awaited<typeof opening>;
  try {
    listen = await opening;
  } catch (err) {
    if (/closed the subscription gracefully/.test(String(err))) return 'graceful';
    throw err;
  }
  return Promise.race([listen.closed, new Promise<string>((r) => setTimeout(() => r('open'), 10_000).unref())]);
}

/** Whether the upstream was asked for a listen naming `uri` (the egress stage let it through). */
function askedFor(upstream: SubscribableModernServer, uri: string): boolean {
  return upstream.listenFilters.some((f) => Array.isArray(f.resourceSubscriptions) && f.resourceSubscriptions.includes(uri));
}

test('a catalog listen still in the old configuration\'s pipeline while a reload judges the listens ends once acknowledged, when the new rules forbid one of its URIs', { timeout: 60_000 }, async () => {
  const dns = stallingResolver(new URL(PARTNER).hostname);
  const upstream = await startSubscribableModernServer();
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams, tools: TOOLS }, { resolveHost: dns.resolveHost });
  const { client } = modernListener();
  try {
    await client.connect(new V2Transport(new URL(gw.url)));
    const kept = await client.listen({ resourceSubscriptions: [KEPT] });
    const opening = client.listen({ resourceSubscriptions: [PARTNER, KEPT] });
    await until(dns.stalled);
    assert.ok(dns.stalled(), 'the listen waits in the egress stage for its host to resolve');

    assert.deepEqual(await gw.gateway.reload(blockingPartner(upstreams)), []);
    dns.release();
    const ended = await endOfOpening(opening);
    assert.ok(askedFor(upstream, PARTNER), 'the old rules let the URI through to the upstream');
    assert.equal(ended, 'graceful', 'the listen holding the URI the new rules forbid ends with its completion result');
    await until(() => upstream.openListens() === 1);
    assert.equal(upstream.openListens(), 1, 'the upstream no longer watches the URI; the listen whose URIs are allowed stays');
    await kept.close();
  } finally {
    dns.release();
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a catalog listen awaiting the upstream\'s acknowledgment while a reload judges the listens ends once acknowledged, when the new rules forbid one of its URIs', { timeout: 60_000 }, async () => {
  const upstream = await startSubscribableModernServer();
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams, tools: TOOLS }, { resolveHost: stubResolver().resolveHost });
  const { client } = modernListener();
  const hold = upstream.holdListenAnswer([PARTNER]);
  try {
    await client.connect(new V2Transport(new URL(gw.url)));
    const opening = client.listen({ resourceSubscriptions: [PARTNER] });
    await hold.held;

    assert.deepEqual(await gw.gateway.reload(blockingPartner(upstreams)), []);
    assert.ok(askedFor(upstream, PARTNER), 'the old rules let the URI through to the upstream');
    hold.release();
    assert.equal(await endOfOpening(opening), 'graceful', 'the listen holding the URI the new rules forbid ends with its completion result');
    await until(() => upstream.openListens() === 0);
    assert.equal(upstream.openListens(), 0, 'the upstream no longer watches the URI');
  } finally {
    hold.release();
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a legacy session\'s subscribe still in the old configuration\'s pipeline while a reload judges the sessions\' subscriptions is dropped, when the new rules forbid its URI', { timeout: 60_000 }, async () => {
  const dns = stallingResolver(new URL(PARTNER).hostname);
  const upstream = await startSubscribableModernServer();
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams, tools: TOOLS }, { resolveHost: dns.resolveHost });
  const { client, updated, connect } = legacySubscriber();
  client.onerror = () => {};
  try {
    await connect(gw.url);
    await client.subscribeResource({ uri: KEPT });
    const late = client.subscribeResource({ uri: PARTNER });
    await until(dns.stalled);
    assert.ok(dns.stalled(), 'the subscribe waits in the egress stage for its host to resolve');

    assert.deepEqual(await gw.gateway.reload(blockingPartner(upstreams)), []);
    dns.release();
    // Answered by the bridge, not refused by the old egress stage: subscribed, or (the URI dropped before the
    // listen carrying it was acknowledged) not honoured.
    const answered = await late.then(() => 'subscribed', (err: unknown) => String(err));
    assert.match(answered, /^subscribed$|did not honour a subscription/, 'the old egress rules let the subscribe through to the session');
    // The session's listen is replaced by one without the URI: the last one asked names KEPT alone.
    const last = (): unknown => upstream.listenFilters.at(-1)?.resourceSubscriptions;
    await until(() => updated.includes(PARTNER) && JSON.stringify(last()) === JSON.stringify([KEPT]));
    assert.deepEqual(last(), [KEPT], 'the upstream is asked to watch only the URI the new rules allow');
    assert.ok(updated.includes(PARTNER), 'the client is told, as a reload tells it of a subscription it dropped');
  } finally {
    dns.release();
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

// Not a gap, kept to show it: a subscribe whose URI is already in the session's set (it reached the bridge)
// is judged by the reload's own judgement even while the listen carrying it awaits its acknowledgment.
test('a legacy session\'s subscribe awaiting the acknowledgment of the listen carrying it while a reload judges the sessions\' subscriptions is dropped, when the new rules forbid its URI', { timeout: 60_000 }, async () => {
  const upstream = await startSubscribableModernServer();
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams, tools: TOOLS }, { resolveHost: stubResolver().resolveHost });
  const { client, updated, connect } = legacySubscriber();
  client.onerror = () => {};
  const hold = upstream.holdListenAnswer([PARTNER]);
  try {
    await connect(gw.url);
    await client.subscribeResource({ uri: KEPT });
    // Answered once a listen is acknowledged: the reload's replacement, without the URI, may come first.
    const late = client.subscribeResource({ uri: PARTNER }).then(() => 'subscribed', (err: unknown) => String(err));
    await hold.held;
    assert.ok(askedFor(upstream, PARTNER), 'the old rules let the URI through to the upstream');

    assert.deepEqual(await gw.gateway.reload(blockingPartner(upstreams)), []);
    const last = (): unknown => upstream.listenFilters.at(-1)?.resourceSubscriptions;
    await until(() => updated.includes(PARTNER) && JSON.stringify(last()) === JSON.stringify([KEPT]));
    hold.release();
    assert.match(await late, /did not honour a subscription/, 'the client is answered that its subscribe was not honoured');
    assert.deepEqual(last(), [KEPT], 'the upstream is asked to watch only the URI the new rules allow');
    assert.ok(updated.includes(PARTNER), 'the client is told, as a reload tells it of a subscription it dropped');
  } finally {
    hold.release();
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});
