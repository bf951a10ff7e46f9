// A modern client's subscriptions/listen through the catalog (two upstreams) across a reload whose rules no
// longer allow one of its resource subscriptions: access rules that now hide the URI, egress rules that now
// block it. The listen was judged when it opened (the access stage, the egress stage's withheld URIs) and its
// filter was settled by its acknowledgment, its first message, sent once (2026-07-28
// basic/patterns/subscriptions.mdx §Acknowledgment): it cannot be narrowed in place. Until 5 December it went
// on as it was: the client went on hearing of a resource now hidden from it (the old catalog's rules judged
// its updates), and the upstream went on watching a URI the egress rules now forbid it to fetch. Now the
// listen ends as a server ends one on its own initiative (§Graceful Closure: its completion result), the
// upstream is no longer asked to watch the URI, and the client's next listen is judged by the new rules and
// acknowledged without it. A listen whose URIs are all still allowed goes on.
// Upstreams: two v1 SDK servers over Streamable HTTP (legacy era, subscribable); client: the v2 SDK's.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { McpServer as V1McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { validateConfigObject } from '../../src/config/load.js';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { stubResolver } from '../helpers/egress-judged.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const KEPT = 'test://kept';
const SECRET = 'test://secret';
/** A fetched scheme's URI, resolving to a public address (EGRESS_DNS): allowed by the default egress rules. */
const PARTNER = 'https://docs.partner.example/a';

const { resolveHost } = stubResolver();
const sessions: V1McpServer[] = [];
let files: V1HttpServer;
let more: V1HttpServer;

before(async () => {
  files = await startV1HttpServer(
    (server) => {
      for (const uri of [KEPT, SECRET, PARTNER]) server.registerResource(uri, uri, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri, text: uri }] }));
      server.server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
      server.server.setRequestHandler(UnsubscribeRequestSchema, async () => ({}));
      sessions.push(server);
    },
    { resources: { subscribe: true } },
  );
  more = await startV1HttpServer(() => {}, { resources: { subscribe: true } });
});
after(async () => {
  await more?.close();
  await files?.close();
});

const upstreams = (): Array<Record<string, unknown>> => [{ name: 'files', url: files.url }, { name: 'more', url: more.url }];
const everything = [{ id: 'all', access: 'allow', tools: ['*'], resources: ['*'] }];

async function reload(gw: TestGateway, policy: Record<string, unknown>): Promise<void> {
  const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams: upstreams(), policy }, 'test');
  assert.deepEqual(await gw.gateway.reload(next), []);
}

/** How many `method` messages about `uri` the first upstream received. */
const received = (method: string, uri: string): number => files.messages.filter((m) => m.method === method && m.params?.uri === uri).length;

/** Sends updates of `uri` from every session until `heard` has `count` of it (bounded: 100 rounds). */
async function updatesUntilHeard(uri: string, heard: string[], count: number): Promise<void> {
  for (let i = 0; i < 100 && heard.filter((u) => u === uri).length < count; i++) {
    for (const server of sessions) if (server.isConnected()) await server.server.sendResourceUpdated({ uri }).catch(() => {});
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** How `subscription` ended, or 'open' if it had not within 10 s. */
function endOf(subscription: { closed: Promise<string> }): Promise<string> {
  return Promise.race([subscription.closed, new Promise<string>((r) => setTimeout(() => r('open'), 10_000).unref())]);
}

async function across(gw: TestGateway, dropped: string, change: () => Promise<void>): Promise<void> {
  const heard: string[] = [];
  const client = new V2Client({ name: 'listener', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  client.setNotificationHandler('notifications/resources/updated', async (n) => void heard.push(n.params.uri));
  await client.connect(new V2Transport(new URL(gw.url)));
  try {
    const both = await client.listen({ resourceSubscriptions: [dropped, KEPT] });
    const keptOnly = await client.listen({ resourceSubscriptions: [KEPT] });
    assert.deepEqual([...both.honoredFilter.resourceSubscriptions!].sort(), [dropped, KEPT].sort());
    await updatesUntilHeard(dropped, heard, 1);
    assert.ok(heard.includes(dropped), 'before the reload its updates arrive');
    const unsubscribes = received('resources/unsubscribe', dropped);

    await change();

    assert.equal(await endOf(both), 'graceful', 'the listen holding the URI ends with its completion result');
    for (let i = 0; i < 100 && received('resources/unsubscribe', dropped) === unsubscribes; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(received('resources/unsubscribe', dropped) > unsubscribes, 'the upstream is no longer asked to watch the URI');
    // The other listen goes on: KEPT's updates still reach it.
    const keptHeard = heard.filter((u) => u === KEPT).length;
    await updatesUntilHeard(KEPT, heard, keptHeard + 1);
    assert.ok(heard.filter((u) => u === KEPT).length > keptHeard, 'the listen whose URIs are all allowed goes on');
    await keptOnly.close();
    // Listening again, the client is judged by the new rules.
    const again = await client.listen({ resourceSubscriptions: [dropped, KEPT] });
    assert.deepEqual(again.honoredFilter.resourceSubscriptions, [KEPT], 'acknowledged without the URI');
    await again.close();
  } finally {
    await client.close();
  }
}

test('access rules that now hide a subscribed resource end the listens holding it', { timeout: 90_000 }, async () => {
  const gw = await startGateway({ upstreams: upstreams(), policy: { rules: everything } }, { resolveHost });
  try {
    await across(gw, SECRET, () => reload(gw, { rules: [{ id: 'no-secret', access: 'deny', resources: [SECRET] }, ...everything] }));
  } finally {
    await gw.close();
  }
});

test('egress rules that now block a subscribed URI end the listens holding it', { timeout: 90_000 }, async () => {
  const gw = await startGateway({ upstreams: upstreams() }, { resolveHost });
  try {
    await across(gw, PARTNER, () => reload(gw, { egress: [{ id: 'no-partner', tools: ['*'], deny: { hosts: ['docs.partner.example'] } }] }));
    assert.equal(gw.logs.filter((l) => l.msg === 'config reloaded').at(-1)?.keptCatalog, true, 'the catalog was kept: only egress rules changed');
  } finally {
    await gw.close();
  }
});
