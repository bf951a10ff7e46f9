// A legacy (2025-11-25) client of one legacy stdio server, across a reload whose egress rules now block one of
// its resource subscriptions. Egress rules leave the upstream on the pass-through and keep its children.
// - `processes: perSession`: the client's session is its own child's, which holds its subscriptions; the
//   client's GET stream carries what the child sends. Until 5 December the reload judged nothing there: the
//   child went on watching the blocked URI and its updates reached the client (and a crash of the child
//   replayed the subscription to its replacement). Now the child is asked to drop it, as an HTTP upstream's
//   session is (reload-rejudges-pass-through-legacy-subscriptions.test.ts), and the client is told with one
//   last notifications/resources/updated of it on its GET stream, as the bridges tell theirs.
// - `processes: shared`: the client's session is Gatehouse's own (the legacy bridge), whose subscriptions a
//   reload already judged (LegacyClientBridge.rejudgeSubscriptions); run here to show the two modes agree.
// Server: the v1 SDK's, over stdio (subscribable-stdio.mjs). Client: the v1 SDK's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { validateConfigObject } from '../../src/config/load.js';
import { stubResolver } from '../helpers/egress-judged.js';
import { legacySubscriber } from '../helpers/legacy-subscriber.js';
import { childSubscriptionsWhen, childTool, touchAllUntil } from '../helpers/subscribable-child.js';
import { startGateway } from '../helpers/gateway.js';
import { blockPartner, keptUpstreams, PARTNER } from '../helpers/pass-through-reload.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

const SERVER = fileURLToPath(new URL('../fixtures/upstreams/subscribable-stdio.mjs', import.meta.url));
const KEPT = 'test://a';
const gateways = gatewaysCheckedForLeakedChildren();

// `era: legacy` pins the server's era: a perSession legacy client then gets its child without a probe, and
// until 5 December the era stayed unknown, so the pass-through noted none of its session's subscriptions.
const runs = [
  { processes: 'perSession', era: 'auto' },
  { processes: 'perSession', era: 'legacy' },
  { processes: 'shared', era: 'auto' },
] as const;

for (const { processes, era } of runs) test(`processes: ${processes} (era: ${era}): egress rules that now block a URI a legacy session subscribed to have the child drop it`, { timeout: 60_000 }, async () => {
  const { resolveHost } = stubResolver();
  const upstreams = [{ name: 'subs', command: [process.execPath, SERVER], era, processes }];
  const gw = await startGateway({ upstreams }, { resolveHost });
  gateways.push(gw);
  const { client, updated: heard, connect } = legacySubscriber();
  const times = (uri: string): number => heard.filter((u) => u === uri).length;
  try {
    await connect(gw.url);
    await client.subscribeResource({ uri: PARTNER });
    await client.subscribeResource({ uri: KEPT });
    assert.deepEqual(await childTool(client, 'subscribed'), [PARTNER, KEPT].sort());
    // The child announces changes on the session's GET stream, which the client opens after initialize.
    await touchAllUntil(client, () => times(PARTNER) > 0 && times(KEPT) > 0);
    assert.ok(times(PARTNER) > 0 && times(KEPT) > 0, 'before the reload both URIs\' updates arrive');
    // They came on touch_all's own answer stream, before its answer: all of them are counted by now.
    const partner = times(PARTNER);

    await blockPartner(gw, upstreams);
    assert.deepEqual(keptUpstreams(gw), ['subs'], 'the same upstream and children, still passed through');

    // The reload's judgement runs after it returns: the child is let go of the URI shortly.
    const held = await childSubscriptionsWhen(client, (uris) => !uris.includes(PARTNER));
    assert.deepEqual(held, [KEPT], 'the child is unsubscribed from the blocked URI, and only from it');
    // Told the one way a 2025-11-25 server can: a last update of the URI, on the session's GET stream.
    for (let i = 0; i < 100 && times(PARTNER) === partner; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(times(PARTNER), partner + 1, 'the client is told once of the dropped subscription');
    const kept = times(KEPT);
    await touchAllUntil(client, () => times(KEPT) > kept);
    assert.ok(times(KEPT) > kept, 'the URI still allowed goes on being heard');
    assert.equal(times(PARTNER), partner + 1, 'no update of the blocked URI reaches the client after that');
    await assert.rejects(client.subscribeResource({ uri: PARTNER }), 'subscribing again, the client is judged by the new rules');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
  }
});

// A reload that retires the pass-through (its first rule on resources takes the upstream behind the catalog),
// then one that passes the same upstream through again (the rule gone). The catalog answers the session 404
// meanwhile, but nothing ends its child: a client that sent nothing in between finds it live again. Until 5
// December its child still held every subscription made before (the hidden one included) while the catalog
// served; now they were dropped when the pass-through was retired, and what the client subscribes to after
// it returns is noted again, for the next reload to judge.
test('processes: perSession: the child drops its subscriptions when the pass-through is retired, and a later pass-through notes new ones', { timeout: 60_000 }, async () => {
  const { resolveHost } = stubResolver();
  const upstreams = [{ name: 'subs', command: [process.execPath, SERVER], processes: 'perSession' }];
  const gw = await startGateway({ upstreams }, { resolveHost });
  gateways.push(gw);
  const client = new V1Client({ name: 'subscriber', version: '1' });
  client.onerror = () => {};
  const base = { auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams };
  try {
    // A client that sends nothing while the catalog serves: its GET stream, ended by the retirement, is not
    // opened again (the SDK's reconnection would meet the catalog's 404 and the session would be over).
    await client.connect(new V1Transport(new URL(gw.url), { reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1_000, maxReconnectionDelay: 1_000, reconnectionDelayGrowFactor: 1 } }));
    await client.subscribeResource({ uri: 'test://b' });
    await client.subscribeResource({ uri: KEPT });
    assert.deepEqual(await childTool(client, 'subscribed'), [KEPT, 'test://b']);

    const hideB = validateConfigObject({ ...base, policy: { rules: [{ id: 'no-b', access: 'deny', resources: ['test://b'] }, { id: 'rest', access: 'allow', resources: ['*'], tools: ['*'] }] } }, 'test');
    assert.deepEqual(await gw.gateway.reload(hideB), []);
    assert.deepEqual(await gw.gateway.reload(validateConfigObject(base, 'test')), []);
    assert.deepEqual(keptUpstreams(gw), ['subs'], 'the same upstream and children, passed through again');

    let held = await childSubscriptionsWhen(client, (uris) => uris.length === 0);
    assert.deepEqual(held, [], 'the session\'s child, live again, dropped what was subscribed through the retired pass-through');

    await client.subscribeResource({ uri: PARTNER });
    await client.subscribeResource({ uri: KEPT });
    await blockPartner(gw, upstreams);
    held = await childSubscriptionsWhen(client, (uris) => !uris.includes(PARTNER));
    assert.deepEqual(held, [KEPT], 'a subscription made after the pass-through came back is judged by the next reload');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
  }
});
