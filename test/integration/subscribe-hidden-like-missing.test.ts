// A resource the access rules hide is answered like one that does not exist, after the same work (README
// "hidden == missing"; 2025-11-25 server/resources.mdx §Subscriptions and §Error Handling), for
// subscriptions too: a legacy client's resources/subscribe and a modern client's subscriptions/listen
// (2026-07-28 basic/patterns/subscriptions.mdx §Acknowledgment: "The `notifications` field in the
// acknowledgment reflects the subset the server agreed to honor"). Resource rules serve every upstream
// through the catalog, here over a v1 SDK server (legacy era, subscribable, holding the public and the
// hidden resource) and a v2 SDK server (modern era, whose lists are counted). Until 5 December a URI no member
// held went to every member, which honoured it (`{}`, or named in the acknowledgment), while a hidden one
// was refused: the difference told which URIs the rules hid. Now both are honoured by none, after the list a
// URI nobody listed makes, and no update about a hidden URI reaches the caller. A subscribe to a hidden URI
// of a fetched scheme is judged by the egress rules as a missing one is (no upstream's rule), not under the
// rule of the member that holds it, which could give it another verdict.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema, SubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { McpServer as V1McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { McpServer as V2McpServer } from '@modelcontextprotocol/server';
import { refusalOf, startRecordingUpstream, type RecordingUpstream } from '../helpers/egress-judged.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const PUBLIC = 'file:///public/a';
const HIDDEN = 'file:///secret/b';
/** Allowed by the rules, held by no member. */
const MISSING = 'file:///public/nowhere';
/** Past the catalog's floor between two lists caused by unknown URIs (catalog.ts RELIST_FLOOR_MS). */
const PAST_FLOOR_MS = 1_100;

/** Every session's McpServer of the legacy upstream, to send updates from. */
const sessions: V1McpServer[] = [];
let files: V1HttpServer;
let other: RecordingUpstream;
/** A second legacy member, for the modern client's listen: a member's listen that ends ends the client's. */
let more: V1HttpServer;
let gw: TestGateway;
let gwLegacyMembers: TestGateway;

before(async () => {
  files = await startV1HttpServer(
    (server) => {
      for (const uri of [PUBLIC, HIDDEN]) server.registerResource(uri, uri, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri, text: uri }] }));
      // A server that honours whatever it is asked to watch, as the SDK's examples do.
      server.server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
      sessions.push(server);
    },
    { resources: { subscribe: true } },
  );
  // A modern member whose lists the catalog does not keep (ttlMs 0): each list the catalog makes reaches it.
  other = await startRecordingUpstream(() => {
    const server = new V2McpServer({ name: 'other', version: '1.0.0' });
    server.registerResource('c', 'file:///other/c', { mimeType: 'text/plain' }, async () => ({ contents: [{ uri: 'file:///other/c', text: 'c' }] }));
    return server;
  });
  more = await startV1HttpServer((server) => {
    server.registerResource('c', 'file:///other/c', { mimeType: 'text/plain' }, async () => ({ contents: [{ uri: 'file:///other/c', text: 'c' }] }));
    server.server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
  }, { resources: { subscribe: true } });
  const policy = { rules: [{ id: 'public', access: 'allow' as const, tools: ['*'], resources: ['file:///public/*', 'file:///other/*'] }] };
  gw = await startGateway({ upstreams: [{ name: 'files', url: files.url }, { name: 'other', url: other.url, era: 'modern' }], policy });
  gwLegacyMembers = await startGateway({ upstreams: [{ name: 'files', url: files.url }, { name: 'more', url: more.url }], policy });
});
after(async () => {
  await gwLegacyMembers?.close();
  await gw?.close();
  await more?.close();
  await files?.close();
  await other?.close();
});

/** How many requests of `method` (about `uri`, when given) the upstreams received. */
function received(method: string, uri?: string): number {
  const about = (m: { method?: unknown; params?: Record<string, unknown> }): boolean => m.method === method && (uri === undefined || m.params?.uri === uri);
  return files.messages.filter(about).length + other.requests.filter(about).length + more.messages.filter(about).length;
}

/** How many resources/list the modern member received. */
const lists = (): number => other.requests.filter((m) => m.method === 'resources/list').length;

/** Sends an update about each URI from every session of the legacy upstream, hidden first. */
async function updateAll(): Promise<void> {
  for (const server of sessions) {
    if (!server.isConnected()) continue;
    for (const uri of [HIDDEN, PUBLIC]) await server.server.sendResourceUpdated({ uri }).catch(() => {});
  }
}

/** Sends updates until `heard` names the public URI (bounded), since the listen upstream opens in the background. */
async function updatesUntilPublicHeard(heard: string[]): Promise<void> {
  for (let i = 0; i < 20 && !heard.includes(PUBLIC); i++) {
    await updateAll();
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('a legacy client: a hidden URI\'s resources/subscribe is answered as a missing one\'s, after the same list, and none of its updates arrive', async () => {
  const client = new V1Client({ name: 'subscriber-v1', version: '1' });
  const heard: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void heard.push(n.params.uri));
  await client.connect(new V1Transport(new URL(gw.url)));
  try {
    await client.subscribeResource({ uri: PUBLIC });
    await new Promise((r) => setTimeout(r, PAST_FLOOR_MS));
    const listsBeforeMissing = lists();
    const missing = await refusalOf(client.subscribeResource({ uri: MISSING }), 'the subscribe to a missing URI');
    const missingLists = lists() - listsBeforeMissing;
    await new Promise((r) => setTimeout(r, PAST_FLOOR_MS));
    const listsBeforeHidden = lists();
    const hidden = await refusalOf(client.subscribeResource({ uri: HIDDEN }), 'the subscribe to a hidden URI');
    const hiddenLists = lists() - listsBeforeHidden;
    assert.equal(missing.code, -32602);
    assert.equal(JSON.stringify(hidden).replaceAll(HIDDEN, 'X'), JSON.stringify(missing).replaceAll(MISSING, 'X'), 'the same words for both');
    assert.ok(missingLists > 0, 'a URI nobody listed makes the catalog list resources again');
    assert.equal(hiddenLists, missingLists, 'a hidden URI makes the same lists');
    assert.deepEqual([received('resources/subscribe', HIDDEN), received('resources/subscribe', MISSING)], [0, 0], 'no upstream was asked to watch either');

    await updatesUntilPublicHeard(heard);
    assert.ok(heard.includes(PUBLIC), 'the public resource\'s update arrived');
    assert.ok(!heard.includes(HIDDEN), 'no update about the hidden resource arrived');
  } finally {
    await client.close();
  }
});

test('a modern client: a hidden URI is left out of subscriptions/listen\'s acknowledgment as a missing one is, and none of its updates arrive', async () => {
  const client = new V2Client({ name: 'subscriber-v2', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const heard: string[] = [];
  client.setNotificationHandler('notifications/resources/updated', async (n) => void heard.push(n.params.uri));
  await client.connect(new V2Transport(new URL(gwLegacyMembers.url)));
  try {
    const subscription = await client.listen({ resourceSubscriptions: [PUBLIC, HIDDEN, MISSING] });
    try {
      assert.deepEqual(subscription.honoredFilter.resourceSubscriptions, [PUBLIC], 'only the URI the caller may use and a member holds is honoured');
      assert.deepEqual([received('resources/subscribe', HIDDEN), received('resources/subscribe', MISSING)], [0, 0]);
      await updatesUntilPublicHeard(heard);
      assert.ok(heard.includes(PUBLIC));
      assert.ok(!heard.includes(HIDDEN), 'no update about the hidden resource arrived');
    } finally {
      await subscription.close();
    }
  } finally {
    await client.close();
  }
});

test('under egress rules that differ by upstream, a hidden URI\'s subscribe is judged as a missing one\'s is, not under its member\'s rule', async () => {
  const LAB_PUBLIC = 'http://10.1.2.3/public/a';
  const LAB_HIDDEN = 'http://10.1.2.3/secret/b';
  const LAB_MISSING = 'http://10.1.2.3/public/nowhere';
  const lab = await startV1HttpServer((server) => {
    for (const uri of [LAB_PUBLIC, LAB_HIDDEN]) server.registerResource(uri, uri, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri, text: uri }] }));
    server.server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
  }, { resources: { subscribe: true } });
  // The lab's own network is reachable for the lab's resources; elsewhere private addresses are blocked.
  const gwLab = await startGateway({
    upstreams: [{ name: 'lab', url: lab.url }, { name: 'more', url: more.url }],
    policy: {
      rules: [{ id: 'public', access: 'allow', tools: ['*'], resources: ['http://10.1.2.3/public/*', 'file:///other/*'] }],
      egress: [{ id: 'lab-net', tools: ['lab/*'], allow: { cidrs: ['10.0.0.0/8'] } }],
    },
  });
  const client = new V1Client({ name: 'subscriber-lab', version: '1' });
  try {
    await client.connect(new V1Transport(new URL(gwLab.url)));
    await client.subscribeResource({ uri: LAB_PUBLIC });
    const missing = await refusalOf(client.subscribeResource({ uri: LAB_MISSING }), 'the subscribe to a missing URI');
    const hidden = await refusalOf(client.subscribeResource({ uri: LAB_HIDDEN }), 'the subscribe to a hidden URI');
    assert.equal(JSON.stringify(hidden).replaceAll(LAB_HIDDEN, 'X'), JSON.stringify(missing).replaceAll(LAB_MISSING, 'X'), 'the same verdict and words for both');
    assert.equal(lab.messages.filter((m) => m.method === 'resources/subscribe' && m.params?.uri === LAB_HIDDEN).length, 0);
  } finally {
    await client.close().catch(() => {});
    await gwLab.close();
    await lab.close();
  }
});
