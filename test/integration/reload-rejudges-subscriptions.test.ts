// A legacy client's resource subscriptions across a reload that changes the rules (README "Across a reload";
// catalog/legacy-front.ts). Gatehouse holds a legacy session's subscriptions in front of the catalog (two
// upstreams) and carries them upstream in a subscriptions/listen. Each was judged when the client made it
// (the access stage, the egress stage). A reload whose access rules now hide the URI, or whose egress rules
// now block it, left it in the session's set: hidden, the client heard nothing more and was never told;
// blocked, the catalog and its listen were kept as they were (egress rules are not the catalog's), so the
// upstream went on watching a URI the rules forbid it to fetch, and the client went on hearing of it.
//
// 2025-11-25 server/resources.mdx §Subscriptions gives a server no way to end a client's subscription, and
// names `notifications/resources/updated` as what a subscribed client hears when the resource changes. So
// now: the URI leaves the session's set, the listen carrying the set is replaced without it (the upstream
// is sent resources/unsubscribe), and the client hears one last update, whose read is refused as anyone's
// read of it now is (hidden: -32602 as a missing resource; blocked: -32602 egress_blocked). A URI the new
// rules still allow goes on as before. (A modern client's listen cannot be narrowed in place: 2026-07-28
// basic/patterns/subscriptions.mdx §Acknowledgment makes the acknowledgment its first message, once.)
// Upstreams: two v1 SDK servers over Streamable HTTP (legacy era, subscribable); client: the v1 SDK's.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema, SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { McpServer as V1McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { validateConfigObject } from '../../src/config/load.js';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { refusalOf, stubResolver } from '../helpers/egress-judged.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const KEPT = 'test://kept';
const SECRET = 'test://secret';
/** A fetched scheme's URI, resolving to a public address (EGRESS_DNS): allowed by the default egress rules. */
const PARTNER = 'https://docs.partner.example/a';
const URIS = [KEPT, SECRET, PARTNER];

const { resolveHost } = stubResolver();
/** Every session's McpServer of the first upstream, to send updates from. */
const sessions: V1McpServer[] = [];
let files: V1HttpServer;
let more: V1HttpServer;

before(async () => {
  files = await startV1HttpServer(
    (server) => {
      for (const uri of URIS) server.registerResource(uri, uri, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri, text: uri }] }));
      server.server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
      server.server.setRequestHandler(UnsubscribeRequestSchema, async () => ({}));
      sessions.push(server);
    },
    { resources: { subscribe: true } },
  );
  more = await startV1HttpServer((server) => {
    server.registerResource('other', 'test://other', { mimeType: 'text/plain' }, async () => ({ contents: [{ uri: 'test://other', text: 'other' }] }));
    server.server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
  }, { resources: { subscribe: true } });
});
after(async () => {
  await more?.close();
  await files?.close();
});

const upstreams = (): Array<Record<string, unknown>> => [{ name: 'files', url: files.url }, { name: 'more', url: more.url }];

/** Reloads `gw` with `policy` over the same upstreams. */
async function reload(gw: TestGateway, policy: Record<string, unknown>): Promise<void> {
  const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams: upstreams(), policy }, 'test');
  assert.deepEqual(await gw.gateway.reload(next), []);
}

/** How many `method` messages about `uri` the first upstream received. */
const received = (method: string, uri: string): number => files.messages.filter((m) => m.method === method && m.params?.uri === uri).length;

/** Waits (bounded: 100 × 100 ms) until `done`. */
async function until(done: () => boolean): Promise<boolean> {
  for (let i = 0; i < 100 && !done(); i++) await new Promise((r) => setTimeout(r, 100));
  return done();
}

/**
 * Sends an update of `first`, then of KEPT, from every session, until `heard` has KEPT `count` times
 * (bounded: 150 rounds). After a hand-over to a new catalog the session's listen is opened again after a
 * pause, once the new catalog has answered a legacy request (legacy-front.ts), so this may take seconds.
 */
async function updatesUntilKeptHeard(first: string, heard: string[], count: number): Promise<void> {
  const kept = (): number => heard.filter((u) => u === KEPT).length;
  for (let i = 0; i < 150 && kept() < count; i++) {
    for (const server of sessions) {
      if (!server.isConnected()) continue;
      await server.server.sendResourceUpdated({ uri: first }).catch(() => {});
      await server.server.sendResourceUpdated({ uri: KEPT }).catch(() => {});
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A v1 client on `gw` subscribed to KEPT and `dropped`, both honoured and held upstream; then `change` (a
 * reload); then the checks that `dropped` left the session and the upstream, and KEPT did not.
 */
async function subscribedAcross(gw: TestGateway, dropped: string, change: () => Promise<void>, refusedRead: (err: { code: number; data?: { code?: string } }) => void): Promise<void> {
  const client = new V1Client({ name: 'subscriber', version: '1' });
  const heard: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void heard.push(n.params.uri));
  await client.connect(new V1Transport(new URL(gw.url)));
  try {
    await client.listResources();
    await client.subscribeResource({ uri: KEPT });
    await client.subscribeResource({ uri: dropped });
    assert.ok(await until(() => received('resources/subscribe', dropped) > 0), 'the upstream was asked to watch the URI');
    await updatesUntilKeptHeard(dropped, heard, 1);
    assert.ok(heard.includes(dropped), 'before the reload, its updates reach the client');
    const unsubscribesBefore = received('resources/unsubscribe', dropped);
    const keptUnsubscribesBefore = received('resources/unsubscribe', KEPT);
    const keptSubscribesBefore = received('resources/subscribe', KEPT);
    const heardBefore = heard.filter((u) => u === dropped).length;

    await change();

    assert.ok(await until(() => received('resources/unsubscribe', dropped) > unsubscribesBefore), 'the upstream is no longer asked to watch the URI');
    assert.ok(await until(() => heard.filter((u) => u === dropped).length > heardBefore), 'the client hears one last update of it');
    refusedRead((await refusalOf(client.readResource({ uri: dropped }), 'the read of the URI after the reload')) as { code: number; data?: { code?: string } });
    // Nothing more of it: its updates, sent before each of KEPT's, stop at the one Gatehouse sent.
    const afterNotice = heard.filter((u) => u === dropped).length;
    const keptSoFar = heard.filter((u) => u === KEPT).length;
    await updatesUntilKeptHeard(dropped, heard, keptSoFar + 2);
    assert.ok(heard.filter((u) => u === KEPT).length >= keptSoFar + 2, 'the subscription the new rules allow goes on');
    assert.equal(heard.filter((u) => u === dropped).length, afterNotice, 'no update of the dropped URI after the notice');
    // Held upstream still: never let go of, or (where a hand-over to a new catalog ended the listen that
    // carried it) asked for again.
    const keptLetGo = received('resources/unsubscribe', KEPT) - keptUnsubscribesBefore;
    assert.ok(keptLetGo === 0 || received('resources/subscribe', KEPT) - keptSubscribesBefore >= keptLetGo, 'the allowed URI stays subscribed upstream');
  } finally {
    await client.close();
  }
}

test('access rules that now hide a subscribed resource: it leaves the session and the upstream, and the client is told', { timeout: 60_000 }, async () => {
  const everything = { rules: [{ id: 'all', access: 'allow', tools: ['*'], resources: ['*'] }] };
  const gw = await startGateway({ upstreams: upstreams(), policy: everything }, { resolveHost });
  try {
    await subscribedAcross(
      gw,
      SECRET,
      () => reload(gw, { rules: [{ id: 'no-secret', access: 'deny', resources: [SECRET] }, ...everything.rules] }),
      (err) => assert.equal(err.code, -32602, 'read as a missing resource'),
    );
  } finally {
    await gw.close();
  }
});

test('egress rules that now block a subscribed URI: it leaves the session and the upstream, and the client is told', { timeout: 60_000 }, async () => {
  const gw = await startGateway({ upstreams: upstreams() }, { resolveHost });
  try {
    await subscribedAcross(
      gw,
      PARTNER,
      () => reload(gw, { egress: [{ id: 'no-partner', tools: ['*'], deny: { hosts: ['docs.partner.example'] } }] }),
      (err) => assert.equal(err.data?.code, 'egress_blocked', JSON.stringify(err)),
    );
    assert.equal(gw.logs.filter((l) => l.msg === 'config reloaded').at(-1)?.keptCatalog, true, 'the catalog was kept: only egress rules changed');
  } finally {
    await gw.close();
  }
});
