// A legacy (2025-11-25) client of one legacy upstream, passed through, across a reload whose egress rules now
// block one of its resource subscriptions, when the upstream refuses the `resources/unsubscribe` Gatehouse
// sends to drop it. Until 5 December the URI was forgotten as the drop was asked: the upstream's session went
// on watching it, and no later reload asked again. Now a failed drop stays noted, is logged at warn once per
// reload, and the next reload asks again.
// Upstream: the v1 SDK's server over Streamable HTTP, refusing unsubscribes while the test says so. Client:
// the v1 SDK's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateConfigObject } from '../../src/config/load.js';
import { startSubscribableV1Http } from '../fixtures/upstreams/subscribable-v1-http.js';
import { stubResolver } from '../helpers/egress-judged.js';
import { legacySubscriber } from '../helpers/legacy-subscriber.js';
import { startGateway } from '../helpers/gateway.js';

const KEPT = 'test://kept';
/** A fetched scheme's URI, resolving to a public address: allowed by the default egress rules. */
const PARTNER = 'https://docs.partner.example/a';
const WARNING = 'the upstream did not drop resource subscriptions legacy sessions made through the pass-through; they stay noted, and the next reload asks again';

test('a drop the upstream refused on one reload is asked again on the next', { timeout: 60_000 }, async () => {
  const { resolveHost } = stubResolver();
  let refusing = true;
  const refusals: string[] = [];
  const upstream = await startSubscribableV1Http({ refuseUnsubscribe: (uri) => (refusing ? (refusals.push(uri), true) : false) });
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams }, { resolveHost });
  const { client, connect } = legacySubscriber();
  // Two configs that both block PARTNER and differ otherwise: a reload to the running config changes nothing.
  const blocking = (id: string) => validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams, policy: { egress: [{ id, tools: ['*'], deny: { hosts: ['docs.partner.example'] } }] } }, 'test');
  const warnings = (): number => gw.logs.filter((l) => l.msg === WARNING).length;
  try {
    await connect(gw.url);
    await client.subscribeResource({ uri: PARTNER });
    await client.subscribeResource({ uri: KEPT });
    assert.deepEqual(upstream.subscribed(), [PARTNER, KEPT].sort());

    assert.deepEqual(await gw.gateway.reload(blocking('no-partner')), []);
    for (let i = 0; i < 100 && warnings() === 0; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(refusals, [PARTNER], 'the reload asked the upstream to drop the blocked URI, and the upstream refused');
    assert.equal(warnings(), 1, 'the failed drop is logged at warn, once');
    assert.equal(gw.logs.find((l) => l.msg === WARNING)?.level, 'warn');
    assert.deepEqual(upstream.subscribed(), [PARTNER, KEPT].sort(), 'the upstream still watches the blocked URI');

    refusing = false;
    assert.deepEqual(await gw.gateway.reload(blocking('still-no-partner')), []);
    for (let i = 0; i < 100 && upstream.subscribed().includes(PARTNER); i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(upstream.subscribed(), [KEPT], 'the next reload asked again, and the upstream dropped the blocked URI, and only it');
    assert.equal(warnings(), 1, 'a drop that succeeds is not warned of');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});
