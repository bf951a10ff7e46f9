// One 2026-07-28 upstream and a legacy (2025-11-25) client: the upstream's own legacy-client bridge
// (upstream/bridge-legacy-client.ts) holds the client's session, its GET stream and its subscriptions, turned
// into an upstream subscriptions/listen. Then a reload whose rules govern resources, which moves the upstream
// behind the catalog (AccessPolicy.perCaller). The catalog does not know the bridged session: the client's
// next request is answered 404. Until 5 December its GET stream, served by the member's bridge, was not among
// the streams the retiring reload ends (SingleUpstream held only those of an era the upstream speaks): it
// stayed open, the upstream kept the session's listen and went on watching its URIs, and their updates went on
// reaching a client whose every request the gateway refused. Now the reload ends that GET stream too: the
// upstream's listen closes, nothing more is relayed, the client's reconnection meets the 404, and a client
// that initializes again is served by the catalog under the new rules.
// The same when no reload but the names check moves the upstream behind the catalog (it starts listing
// `get.user`, which the catalog rewrites): SingleUpstream.toCatalog retires the pass-through's streams alike.
// The other bridge too: a modern client's listen on a legacy-only upstream, which the member's modern-client
// bridge serves from a legacy session of its own, gets its completion result (2026-07-28
// basic/patterns/subscriptions.mdx §Graceful Closure), as a passed-through listen does.
// Upstreams: the v2 SDK's subscribable server over Streamable HTTP; a 2026-07-28 stdio child
// (lying-listen-stdio.mjs, which announces an update of each URI it is asked about as each listen opens);
// the v1 SDK's server over Streamable HTTP; a v2 SDK server built here whose tools the test changes.
// Clients: the v1 SDK's and the v2 SDK's.

import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { startSubscribableModernServer } from '../fixtures/upstreams/subscribable-modern-server.js';
import { startAnnouncingV1Http } from '../fixtures/upstreams/announcing-v1-http.js';
import { listenLoopback, readBody, toFetchRequest, writeFetchResponse } from '../fixtures/upstreams/node-adapter.js';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { startGateway } from '../helpers/gateway.js';
import { modernListener } from '../helpers/modern-listener.js';
import { endedCount, endOf, retirePassThrough, SECRET } from '../helpers/pass-through-reload.js';
import { waitUntil } from '../helpers/stdio-children.js';

const KEPT = 'test://kept';

/** A v1 SDK client (not yet connected), the URIs of the updates it hears and the errors its transport reports. */
function legacyClient(): { client: V1Client; heard: string[]; errors: string[] } {
  const client = new V1Client({ name: 'subscriber', version: '1' });
  const heard: string[] = [];
  const errors: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void heard.push(n.params.uri));
  client.onerror = (err) => void errors.push(err.message);
  return { client, heard, errors };
}

/** The status of a ping POSTed under `sessionId`, as a legacy client sends it. */
async function pingStatus(url: string, sessionId: string): Promise<number> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  await response.body?.cancel();
  return response.status;
}

test('a bridged legacy session\'s GET stream ends when a reload moves its modern upstream behind the catalog', { timeout: 60_000 }, async () => {
  const upstream = await startSubscribableModernServer();
  // uriPrefixes: the catalog routes a subscription of a URI the upstream does not list by them.
  const upstreams = [{ name: 'files', url: upstream.url, uriPrefixes: ['test://'] }];
  const gw = await startGateway({ upstreams });
  const first = legacyClient();
  const second = legacyClient();
  /** Publishes an update of KEPT every 100 ms while `more()`, at most `rounds` times. */
  const publish = async (more: () => boolean, rounds = 100): Promise<void> => {
    for (let i = 0; i < rounds && more(); i++) {
      upstream.notify.resourceUpdated(KEPT);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  try {
    const transport = new V1Transport(new URL(gw.url));
    await first.client.connect(transport);
    const sessionId = transport.sessionId!;
    await first.client.subscribeResource({ uri: KEPT });
    await publish(() => first.heard.length === 0);
    assert.ok(first.heard.length > 0, 'before the reload the bridged GET stream relays the upstream listen\'s updates');
    assert.equal(upstream.openListens(), 1);

    await retirePassThrough(gw, upstreams);
    assert.ok(await waitUntil(() => upstream.openListens() === 0, 10_000), 'the upstream\'s listen for the session is closed: it no longer watches for it');
    const before = first.heard.length;
    await publish(() => true, 20);
    assert.equal(first.heard.length, before, 'nothing more is relayed to the session the catalog does not know');
    // The client's reconnection and its next request meet the catalog, which does not know the session.
    assert.ok(await waitUntil(() => first.errors.some((m) => m.includes('Not Found')), 10_000), `the GET stream reconnects and meets the 404: ${first.errors.join('; ')}`);
    assert.equal(await pingStatus(gw.url, sessionId), 404);
    assert.equal(endedCount(gw), 1, 'the reload counts the bridged GET stream among those it ended');

    // Initialized again, a client is served by the catalog under the new rules.
    await second.client.connect(new V1Transport(new URL(gw.url)));
    await second.client.subscribeResource({ uri: KEPT });
    await assert.rejects(second.client.subscribeResource({ uri: SECRET }));
    await publish(() => second.heard.length === 0);
    assert.ok(second.heard.length > 0, 'the new session hears of the URI the rules allow');
  } finally {
    await first.client.close().catch(() => {});
    await second.client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a bridged legacy session\'s GET stream on a stdio upstream ends when a reload moves the upstream behind the catalog', { timeout: 60_000 }, async () => {
  const child = fileURLToPath(new URL('../fixtures/upstreams/lying-listen-stdio.mjs', import.meta.url));
  const upstreams = [{ name: 'child', command: [process.execPath, child] }];
  const gw = await startGateway({ upstreams });
  const { client, heard, errors } = legacyClient();
  try {
    const transport = new V1Transport(new URL(gw.url));
    await client.connect(transport);
    const sessionId = transport.sessionId!;
    await client.subscribeResource({ uri: KEPT });
    assert.ok(await waitUntil(() => heard.length > 0, 10_000), 'before the reload the child\'s listen is relayed on the GET stream');

    await retirePassThrough(gw, upstreams);
    assert.ok(await waitUntil(() => errors.some((m) => m.includes('Not Found')), 10_000), `the GET stream reconnects and meets the 404: ${errors.join('; ')}`);
    assert.equal(await pingStatus(gw.url, sessionId), 404);
    assert.equal(endedCount(gw), 1, 'the reload counts the bridged GET stream among those it ended');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
  }
});

test('a modern client\'s listen bridged to a legacy upstream gets its completion result when a reload moves the upstream behind the catalog', { timeout: 60_000 }, async () => {
  const upstream = await startAnnouncingV1Http(KEPT);
  const upstreams = [{ name: 'files', url: upstream.url }];
  const gw = await startGateway({ upstreams });
  const { client, heard } = modernListener();
  try {
    await client.connect(new V2Transport(new URL(gw.url)));
    const listen = await client.listen({ resourceSubscriptions: [KEPT] });
    assert.deepEqual(listen.honoredFilter.resourceSubscriptions, [KEPT]);
    await upstream.announce(() => heard.length === 0);
    assert.ok(heard.length > 0, 'before the reload the bridge relays the upstream session\'s updates');

    await retirePassThrough(gw, upstreams);
    assert.equal(await endOf(listen), 'graceful', 'the listen ends with its completion result');
    assert.equal(endedCount(gw), 1);
    const before = heard.length;
    await upstream.announce(() => true, 20);
    assert.equal(heard.length, before, 'nothing more of the bridge\'s legacy session reaches the client');
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await upstream.close();
  }
});

test('a bridged legacy session\'s GET stream ends when the names check moves its modern upstream behind the catalog', { timeout: 60_000 }, async () => {
  // A 2026-07-28 server (v2 SDK) that lists `get.user` once told to, and counts the listens open on it.
  let dotted = false;
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: 'renaming', version: '1.0.0' }, { capabilities: { resources: { subscribe: true }, tools: { listChanged: true } } });
      server.registerTool('get_user', { description: 'get_user' }, async () => ({ content: [{ type: 'text', text: 'get_user' }] }));
      if (dotted) server.registerTool('get.user', { description: 'get.user' }, async () => ({ content: [{ type: 'text', text: 'get.user' }] }));
      return server;
    },
    { legacy: 'reject' },
  );
  let openListens = 0;
  const { server, port } = await listenLoopback(async (req, res) => {
    const body = await readBody(req);
    if (body.toString('utf8').includes('"subscriptions/listen"')) {
      openListens++;
      res.on('close', () => void openListens--);
    }
    await writeFetchResponse(res, await handler.fetch(toFetchRequest(req, res, body)));
  });
  const gw = await startGateway({ upstreams: [{ name: 'users', url: `http://127.0.0.1:${port}/mcp` }] });
  const { client, heard, errors } = legacyClient();
  try {
    const transport = new V1Transport(new URL(gw.url));
    await client.connect(transport);
    const sessionId = transport.sessionId!;
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['get_user'], 'passed through: the upstream\'s own names');
    await client.subscribeResource({ uri: KEPT });
    for (let i = 0; i < 100 && heard.length === 0; i++) {
      handler.notify.resourceUpdated(KEPT);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(heard.length > 0, 'the bridged GET stream relays the upstream listen\'s updates');

    dotted = true;
    await client.listTools().catch(() => {});
    assert.ok(gw.logs.some((l) => l.msg === 'upstream now lists names that need rewriting; serving it through the catalog from now on'), 'the upstream is behind the catalog now');
    assert.equal(gw.logs.find((l) => l.msg === 'the listening streams the pass-through opened were ended: the upstream is served through the catalog now')?.ended, 1, 'the switch ended the bridged GET stream');
    assert.ok(await waitUntil(() => openListens === 0, 10_000), 'the upstream\'s listen for the session is closed');
    assert.ok(await waitUntil(() => errors.some((m) => m.includes('Not Found')), 10_000), `the GET stream reconnects and meets the 404: ${errors.join('; ')}`);
    assert.equal(await pingStatus(gw.url, sessionId), 404);
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
