// A legacy client's resource subscriptions across a reload whose egress rules block one of them, with ONE
// upstream: a 2026-07-28 server, so Gatehouse holds the legacy client's session in the upstream's own
// legacy-client bridge (upstream/bridge-legacy-client.ts) and carries its subscriptions in a
// subscriptions/listen. Egress rules leave the upstream on its own path (rules on resources would move it
// behind the catalog, which ends the bridged GET stream instead: reload-ends-bridged-streams.test.ts). With
// several upstreams the catalog's sessions were judged again on reload (reload-rejudges-subscriptions.test.ts);
// a single upstream's were not, until 5 December: the blocked URI stayed in the listen, the upstream went on
// watching it and its updates went on reaching the client, whose read of it was refused. Now, as with the
// catalog, the URI leaves the session and the upstream's listen, the client hears one last update of it, and
// the URI the rules still allow goes on.
// Upstreams: the v2 SDK's subscribable server over Streamable HTTP; a 2026-07-28 stdio child
// (lying-listen-stdio.mjs, which announces an update of each URI it is asked about as each listen opens).
// Client: the v1 SDK's.

import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { validateConfigObject } from '../../src/config/load.js';
import { startSubscribableModernServer, type SubscribableModernServer } from '../fixtures/upstreams/subscribable-modern-server.js';
import { stubResolver } from '../helpers/egress-judged.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const KEPT = 'test://kept';
/** A fetched scheme's URI, resolving to a public address (EGRESS_DNS): allowed until the reload's egress rule. */
const SECRET = 'https://docs.partner.example/a';
let upstream: SubscribableModernServer;
let gw: TestGateway;

before(async () => {
  upstream = await startSubscribableModernServer();
  gw = await startGateway({ upstreams: [{ name: 'files', url: upstream.url }] }, { resolveHost: stubResolver().resolveHost });
});
after(async () => {
  await gw?.close();
  await upstream?.close();
});

/** Publishes updates of `uris` in order until `done()` (bounded: 100 rounds); whether it came to pass. */
async function publishUntil(uris: string[], done: () => boolean): Promise<boolean> {
  for (let i = 0; i < 100 && !done(); i++) {
    for (const uri of uris) upstream.notify.resourceUpdated(uri);
    await new Promise((r) => setTimeout(r, 100));
  }
  return done();
}

test('one modern upstream: a reload whose egress rules block a subscribed URI takes it from the legacy session and the upstream', { timeout: 60_000 }, async () => {
  const client = new V1Client({ name: 'subscriber', version: '1' });
  const heard: string[] = [];
  const count = (uri: string): number => heard.filter((u) => u === uri).length;
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void heard.push(n.params.uri));
  await client.connect(new V1Transport(new URL(gw.url)));
  try {
    await client.subscribeResource({ uri: SECRET });
    await client.subscribeResource({ uri: KEPT });
    assert.ok(await publishUntil([SECRET, KEPT], () => count(SECRET) > 0 && count(KEPT) > 0), 'before the reload both are heard');
    const secretBefore = count(SECRET);

    const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams: [{ name: 'files', url: upstream.url }], policy: { egress: [{ id: 'no-partner', tools: ['*'], deny: { hosts: ['docs.partner.example'] } }] } }, 'test');
    assert.deepEqual(await gw.gateway.reload(next), []);

    // The upstream's listen is replaced without the blocked URI.
    for (let i = 0; i < 100 && !(upstream.listenFilters.at(-1)?.resourceSubscriptions as string[] | undefined)?.every((u) => u !== SECRET); i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(upstream.listenFilters.at(-1)?.resourceSubscriptions, [KEPT], 'the upstream is no longer asked to watch the URI');
    // The client is told the one way a 2025-11-25 server can: a last update, whose read is now refused.
    for (let i = 0; i < 100 && count(SECRET) === secretBefore; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(count(SECRET), secretBefore + 1, 'the client hears one last update of it');
    await assert.rejects(client.readResource({ uri: SECRET }), 'a read of it is refused under the new rules');
    // SECRET is published before KEPT each round: KEPT heard twice more, SECRET was not relayed in between.
    const keptSoFar = count(KEPT);
    assert.ok(await publishUntil([SECRET, KEPT], () => count(KEPT) >= keptSoFar + 2), 'the URI the rules allow goes on');
    assert.equal(count(SECRET), secretBefore + 1, 'no update of the blocked URI after the notice');
  } finally {
    await client.close();
  }
});

test('one stdio upstream: a reload whose egress rules block a subscribed URI takes it from the legacy session its bridge holds', { timeout: 60_000 }, async () => {
  const child = fileURLToPath(new URL('../fixtures/upstreams/lying-listen-stdio.mjs', import.meta.url));
  const upstreams = [{ name: 'child', command: [process.execPath, child] }];
  const stdioGw = await startGateway({ upstreams }, { resolveHost: stubResolver().resolveHost });
  const client = new V1Client({ name: 'subscriber', version: '1' });
  const heard: string[] = [];
  const count = (uri: string): number => heard.filter((u) => u === uri).length;
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void heard.push(n.params.uri));
  const until = async (done: () => boolean): Promise<boolean> => {
    for (let i = 0; i < 100 && !done(); i++) await new Promise((r) => setTimeout(r, 100));
    return done();
  };
  try {
    await client.connect(new V1Transport(new URL(stdioGw.url)));
    await client.subscribeResource({ uri: SECRET });
    await client.subscribeResource({ uri: KEPT });
    assert.ok(await until(() => count(KEPT) > 0 && count(SECRET) > 0), `the child's updates are heard: ${heard.join(', ')}`);
    const secretBefore = count(SECRET);
    const keptBefore = count(KEPT);
    const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams, policy: { egress: [{ id: 'no-partner', tools: ['*'], deny: { hosts: ['docs.partner.example'] } }] } }, 'test');
    assert.deepEqual(await stdioGw.gateway.reload(next), []);
    // The child's listen is replaced with KEPT alone (it announces KEPT as the new one opens), and the client
    // hears one last update of SECRET.
    assert.ok(await until(() => count(KEPT) > keptBefore && count(SECRET) > secretBefore), `after the reload: ${heard.join(', ')}`);
    assert.equal(count(SECRET), secretBefore + 1, 'one last update of the blocked URI, and none from the child');
  } finally {
    await client.close();
    await stdioGw.close();
  }
});
