// The HTTP+SSE (2024-11-05) front door (listen.ssePath) in front of one legacy upstream passed through, across
// reloads. Each connection is a legacy session of Gatehouse's own pipeline, whose server messages come from
// a GET the endpoint opens itself (edge/sse-endpoint.ts): the pass-through holds that GET as it holds a
// Streamable HTTP client's (pass-through-streams.ts), and notes the connection's subscriptions
// (pass-through-subscriptions.ts).
// - A reload that moves the upstream behind the catalog (a rule on resources) ends that GET; opened again, it
//   is answered 404 (the catalog does not know the session). Until 5 December the endpoint took that 404 for
//   "no GET stream offered" and left the connection open and deaf: a client that only listened never heard
//   again, nor learned that its session was gone. Now a 404 on the listen ends the connection, as a 404 on one
//   of its POSTs does, and the client connects anew.
// - A reload whose egress rules block a URI the connection subscribed to has the upstream's session drop it.
// Upstream: the v1 SDK's server over Streamable HTTP (legacy era). Client: the v1 SDK's, over HTTP+SSE.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { validateConfigObject } from '../../src/config/load.js';
import { startSubscribableV1Http } from '../fixtures/upstreams/subscribable-v1-http.js';
import { stubResolver } from '../helpers/egress-judged.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const SECRET = 'test://secret';
const KEPT = 'test://kept';
/** A fetched scheme's URI, resolving to a public address (EGRESS_DNS): allowed by the default egress rules. */
const PARTNER = 'https://docs.partner.example/a';

/** A v1 SDK client connected at the gateway's /sse, the URIs of the updates it hears, and the errors its connection reports. */
async function sseClient(gw: TestGateway): Promise<{ client: V1Client; heard: string[]; errors: unknown[] }> {
  const client = new V1Client({ name: 'sse-subscriber', version: '1' });
  const heard: string[] = [];
  const errors: unknown[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void heard.push(n.params.uri));
  client.onerror = (err) => void errors.push(err);
  await client.connect(new SSEClientTransport(new URL('/sse', gw.origin)), { timeout: 10_000 });
  return { client, heard, errors };
}


const reloadTo = async (gw: TestGateway, rest: Record<string, unknown>): Promise<void> => {
  const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0, ssePath: '/sse' }, ...rest }, 'test');
  assert.deepEqual(await gw.gateway.reload(next), []);
};

test('an HTTP+SSE connection on the pass-through ends when a reload moves the upstream behind the catalog', { timeout: 60_000 }, async () => {
  const upstream = await startSubscribableV1Http();
  const upstreams = [{ name: 'files', url: upstream.url, era: 'legacy' }];
  const gw = await startGateway({ listen: { ssePath: '/sse' }, upstreams });
  const { client, heard, errors } = await sseClient(gw);
  try {
    await client.subscribeResource({ uri: SECRET });
    await upstream.publish(100, () => heard.length > 0);
    assert.ok(heard.length > 0, 'before the reload its updates arrive');

    await reloadTo(gw, { upstreams, policy: { rules: [{ id: 'no-secret', access: 'deny', resources: [SECRET] }, { id: 'rest', access: 'allow', resources: ['*'] }] } });
    const before = heard.length;
    // The listen is opened again after RELISTEN_MIN_MS (1 s) and answered 404: the connection then ends.
    for (let i = 0; i < 100 && errors.length === 0; i++) await upstream.publish(1);
    assert.equal(heard.length, before, 'no update of the hidden URI reaches the client after the reload');
    assert.ok(errors.length > 0, 'the connection ends: the client learns its session is gone');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('egress rules that now block a URI an HTTP+SSE connection subscribed to on the pass-through unsubscribe the upstream from it', { timeout: 60_000 }, async () => {
  const { resolveHost } = stubResolver();
  const upstream = await startSubscribableV1Http();
  const upstreams = [{ name: 'files', url: upstream.url, era: 'legacy' }];
  const gw = await startGateway({ listen: { ssePath: '/sse' }, upstreams }, { resolveHost });
  const { client, heard } = await sseClient(gw);
  const times = (uri: string): number => heard.filter((u) => u === uri).length;
  const subscribedSessions = (): string[][] => upstream.sessions.filter((s) => s.subscribed.size > 0).map((s) => [...s.subscribed]);
  try {
    await client.subscribeResource({ uri: PARTNER });
    await client.subscribeResource({ uri: KEPT });
    await upstream.publish(100, () => times(PARTNER) > 0 && times(KEPT) > 0);
    assert.ok(times(PARTNER) > 0 && times(KEPT) > 0, 'before the reload both URIs\' updates arrive');

    await reloadTo(gw, { upstreams, policy: { egress: [{ id: 'no-partner', tools: ['*'], deny: { hosts: ['docs.partner.example'] } }] } });
    for (let i = 0; i < 100 && subscribedSessions().some((uris) => uris.includes(PARTNER)); i++) await new Promise((r) => setTimeout(r, 100));
    const partner = times(PARTNER);
    const kept = times(KEPT);
    await upstream.publish(100, () => times(KEPT) > kept + 2);
    assert.ok(times(KEPT) > kept, 'the URI still allowed goes on being heard');
    assert.equal(times(PARTNER), partner, 'no update of the blocked URI reaches the client after the reload');
    assert.deepEqual(subscribedSessions(), [[KEPT]], 'the upstream\'s session holds only the URI still allowed');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});
