// A modern client's listen passed through to one 2026-07-28 upstream, naming a URI the old egress rules
// allow, on its way while a reload that KEEPS the pass-through (new egress rules block the URI's host; egress
// rules do not take the upstream behind the catalog) judges the listens it holds: still in the old
// configuration's pipeline (the egress stage waiting for the URI's host to resolve), or awaiting the
// upstream's acknowledgment. Either is held only after the reload's judgement, which did not see it. Until
// 5 December it then went on, the upstream watching a URI the new rules forbid, until a later reload. Now a
// listen carried by an older configuration's pass-through than the one whose rules judged last is judged
// under those rules as it is held, and ends with its completion result if they forbid one of its URIs.
// Upstream: the v2 SDK's subscribable server over Streamable HTTP. Client: the v2 SDK's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { startSubscribableModernServer } from '../fixtures/upstreams/subscribable-modern-server.js';
import { stallingResolver, stubResolver } from '../helpers/egress-judged.js';
import { startGateway } from '../helpers/gateway.js';
import { modernListener } from '../helpers/modern-listener.js';
import { blockPartner, endOf, keptUpstreams, PARTNER } from '../helpers/pass-through-reload.js';
import { waitUntil } from '../helpers/stdio-children.js';

const KEPT = 'test://kept';

/**
 * How a listen still opening ended: 'graceful' when its completion result came, before its acknowledgment
 * (the SDK then rejects the listen) or after it; 'open' if it had not within 10 s.
 */
async function endOfOpening(opening: Promise<Awaited<ReturnType<V2Client['listen']>>>): Promise<string> {
  let listen: Awaited<typeof opening>;
  try {
    listen = await opening;
  } catch (err) {
    if (/closed the subscription gracefully/.test(String(err))) return 'graceful';
    throw err;
  }
  return endOf(listen);
}

/** Whether the upstream was asked for a listen naming `uri` (the egress stage let it through). */
function askedFor(upstream: { listenFilters: Array<Record<string, unknown>> }, uri: string): boolean {
  return upstream.listenFilters.some((f) => Array.isArray(f.resourceSubscriptions) && f.resourceSubscriptions.includes(uri));
}

test('a listen still in the old configuration\'s pipeline while a reload that keeps the pass-through judges the listens ends once held, when the new rules forbid one of its URIs', { timeout: 60_000 }, async () => {
  // The old egress stage resolves the URI's host before the listen goes on: held here until the reload is done.
  const { resolveHost, stalled, release } = stallingResolver(new URL(PARTNER).hostname);
  const upstream = await startSubscribableModernServer();
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams }, { resolveHost });
  const { client } = modernListener();
  try {
    await client.connect(new V2Transport(new URL(gw.url)));
    const kept = await client.listen({ resourceSubscriptions: [KEPT] });
    const opening = client.listen({ resourceSubscriptions: [PARTNER, KEPT] });
    await waitUntil(stalled, 5_000);
    assert.ok(stalled(), 'the listen waits in the egress stage for its host to resolve');

    await blockPartner(gw, upstreams);
    assert.deepEqual(keptUpstreams(gw), ['files'], 'the same upstream, still passed through');

    release();
    const ended = await endOfOpening(opening);
    assert.ok(askedFor(upstream, PARTNER), 'the old rules let the URI through to the upstream');
    assert.equal(ended, 'graceful', 'the listen holding the URI the new rules forbid ends with its completion result');
    await waitUntil(() => upstream.openListens() === 1, 10_000);
    assert.equal(upstream.openListens(), 1, 'the upstream no longer watches the URI; the listen whose URIs are allowed stays');
    await kept.close();
  } finally {
    release();
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a listen awaiting the upstream\'s acknowledgment while a reload that keeps the pass-through judges the listens ends once held, when the new rules forbid one of its URIs', { timeout: 60_000 }, async () => {
  const upstream = await startSubscribableModernServer();
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams }, { resolveHost: stubResolver().resolveHost });
  const { client } = modernListener();
  const hold = upstream.holdListenAnswer([PARTNER]);
  try {
    await client.connect(new V2Transport(new URL(gw.url)));
    const opening = client.listen({ resourceSubscriptions: [PARTNER] });
    await hold.held;

    await blockPartner(gw, upstreams);
    assert.deepEqual(keptUpstreams(gw), ['files'], 'the same upstream, still passed through');

    assert.ok(askedFor(upstream, PARTNER), 'the old rules let the URI through to the upstream');
    hold.release();
    assert.equal(await endOfOpening(opening), 'graceful', 'the listen holding the URI the new rules forbid ends with its completion result');
    await waitUntil(() => upstream.openListens() === 0, 10_000);
    assert.equal(upstream.openListens(), 0, 'the upstream no longer watches the URI');
  } finally {
    hold.release();
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});
