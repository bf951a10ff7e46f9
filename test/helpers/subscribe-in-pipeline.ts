// The set-up of the tests of a legacy client's resources/subscribe that is still in the old configuration's
// pipeline while a reload runs: a v1 SDK upstream passed through, which records every resources/unsubscribe it
// gets (and honours it), a client subscribed to one URI, and its subscribe of PARTNER held in the egress stage
// (the lookup of PARTNER's host stalled) until the test releases it.

import assert from 'node:assert/strict';
import type { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startSubscribableV1Http, type SubscribableV1Http } from '../fixtures/upstreams/subscribable-v1-http.js';
import { stallingResolver } from './egress-judged.js';
import { startGateway, type TestGateway } from './gateway.js';
import { legacySubscriber } from './legacy-subscriber.js';
import { PARTNER } from './pass-through-reload.js';
import { waitUntil } from './stdio-children.js';

export interface SubscribeInPipeline {
  gw: TestGateway;
  upstream: SubscribableV1Http;
  /** The gateway's upstreams, for the reload's config. */
  upstreams: Array<{ name: string; url: string }>;
  client: V1Client;
  /** The URIs of the resources/unsubscribe the upstream got, in order. */
  unsubscribes: string[];
  /** The subscribe of PARTNER, answered once released. */
  late: Promise<unknown>;
  /** Lets the stalled lookup, and so the subscribe, go on. */
  release(): void;
  /** Releases the lookup, then closes the client, the gateway and the upstream. */
  close(): Promise<void>;
}

/** `kept` subscribed first; then the subscribe of PARTNER, asserted to wait in the egress stage. */
export async function subscribeInPipeline(kept: string): Promise<SubscribeInPipeline> {
  const { resolveHost, stalled, release } = stallingResolver(new URL(PARTNER).hostname);
  const unsubscribes: string[] = [];
  const upstream = await startSubscribableV1Http({ refuseUnsubscribe: (uri) => (unsubscribes.push(uri), false) });
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams }, { resolveHost });
  const { client, connect } = legacySubscriber();
  client.onerror = () => {};
  const close = async (): Promise<void> => {
    release();
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  };
  try {
    await connect(gw.url);
    await client.subscribeResource({ uri: kept });
    const late = client.subscribeResource({ uri: PARTNER });
    await waitUntil(stalled, 5_000);
    assert.ok(stalled(), 'the subscribe waits in the egress stage for its host to resolve');
    return { gw, upstream, upstreams, client, unsubscribes, late, release, close };
  } catch (err) {
    await close();
    throw err;
  }
}
