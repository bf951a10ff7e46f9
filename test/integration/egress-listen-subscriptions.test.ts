// Egress rules on a modern client's subscriptions/listen `resourceSubscriptions` (2026-07-28
// basic/patterns/subscriptions.mdx §Notification Filter, §Acknowledgment). A server that serves a resource
// by fetching its URI may fetch it to watch it, as for resources/subscribe (egress-resource-subscribe.test.ts),
// which was judged while a listen naming the same URI reached the server unjudged until 5 December. Now each
// URI of a fetched scheme is judged as a subscribe of it is, under the rule covering the upstream that holds
// it, and one blocked is taken out of the filter: the server never hears of it, and the acknowledgment
// leaves it out as it leaves out a URI the server does not honour ("the subset the server agreed to
// honor"). A custom scheme (test://…) is the server's identifier and passes unresolved. Upstreams: the v2
// SDK's subscribable server (through pass-through, and two of them through the catalog); client: the v2
// SDK's, pinned to 2026-07-28. One fake upstream misbehaves on purpose: it sends an update about a URI it
// was never asked for, which must not reach the client.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { startSubscribableModernServer, type SubscribableModernServer } from '../fixtures/upstreams/subscribable-modern-server.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { stubResolver } from '../helpers/egress-judged.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest } from '../helpers/http.js';

const { resolveHost, resolved } = stubResolver();
const METADATA = 'http://169.254.169.254/latest/meta-data/';
const INSIDE = 'gopher://inside.attacker.test:6379/_INFO';
const PARTNER = 'https://docs.partner.example/a';
const ELSEWHERE = 'https://www.elsewhere.example/';
const TEST_RESOURCE = 'test://example-resource';

let up: SubscribableModernServer;
let second: SubscribableModernServer;
/** One upstream, passed through; the default egress rules. */
let gwPass: TestGateway;
/** Two upstreams, through the catalog; the default egress rules. */
let gwCatalog: TestGateway;
/** One upstream, passed through, under a rule covering it: https partner hosts only. */
let gwPartner: TestGateway;

before(async () => {
  up = await startSubscribableModernServer();
  second = await startSubscribableModernServer();
  gwPass = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }] }, { resolveHost });
  gwCatalog = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }, { name: 'second', url: second.url, era: 'modern' }] }, { resolveHost });
  gwPartner = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], policy: { egress: [{ id: 'partner-only', tools: ['up/*'], allow: { hosts: ['*.partner.example'], schemes: ['https'] } }] } }, { resolveHost });
});
after(async () => {
  await gwPartner?.close();
  await gwCatalog?.close();
  await gwPass?.close();
  await second?.close();
  await up?.close();
});

/** Listens through `url` for `uris`; hands `body` the honoured URIs and the updates heard; closes it all. */
async function listening(url: string, uris: string[], body: (honoured: unknown, heard: string[]) => Promise<void>): Promise<void> {
  const client = new V2Client({ name: 'listener', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const heard: string[] = [];
  client.setNotificationHandler('notifications/resources/updated', async (n) => void heard.push(n.params.uri));
  await client.connect(new V2Transport(new URL(url)));
  try {
    const subscription = await client.listen({ resourceSubscriptions: uris });
    try {
      await body(subscription.honoredFilter.resourceSubscriptions, heard);
    } finally {
      await subscription.close();
    }
  } finally {
    await client.close();
  }
}

/** Whether any listen filter `server` received named `uri`. */
const asked = (server: SubscribableModernServer, uri: string): boolean => server.listenFilters.some((f) => Array.isArray(f.resourceSubscriptions) && f.resourceSubscriptions.includes(uri));

/** Publishes an update of `uri` until `heard` has it (bounded: the listen may still be opening upstream). */
async function publishUntilHeard(server: SubscribableModernServer, uri: string, heard: string[]): Promise<void> {
  for (let i = 0; i < 30 && !heard.includes(uri); i++) {
    await server.notify.resourceUpdated(uri);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('egress rules on subscriptions/listen resource subscriptions', () => {
  test('pass-through: a metadata URI and a gopher: URI resolving inside are left out of the acknowledgment and never reach the upstream', async () => {
    await listening(gwPass.url, [METADATA, PARTNER, INSIDE, TEST_RESOURCE], async (honoured, heard) => {
      assert.deepEqual(honoured, [PARTNER, TEST_RESOURCE]);
      assert.deepEqual([asked(up, METADATA), asked(up, INSIDE), asked(up, PARTNER)], [false, false, true]);
      await publishUntilHeard(up, PARTNER, heard);
      assert.deepEqual(heard.filter((u) => u === PARTNER).length > 0, true, 'the allowed URI\'s updates arrive');
    });
  });

  test('the custom scheme is never resolved', async () => {
    const before = resolved.length;
    await listening(gwPass.url, [TEST_RESOURCE], async (honoured) => {
      assert.deepEqual(honoured, [TEST_RESOURCE]);
      assert.equal(resolved.length, before);
    });
  });

  test('catalog: the same URIs are left out across two upstreams', async () => {
    await listening(gwCatalog.url, [METADATA, PARTNER, INSIDE], async (honoured) => {
      assert.deepEqual(honoured, [PARTNER]);
      for (const server of [up, second]) assert.deepEqual([asked(server, METADATA), asked(server, INSIDE)], [false, false]);
    });
  });

  test('the rule covering the upstream (up/*) judges a listen\'s URI as it judges a subscribe', async () => {
    await listening(gwPartner.url, [ELSEWHERE, PARTNER], async (honoured) => {
      assert.deepEqual(honoured, [PARTNER]);
      assert.equal(asked(up, ELSEWHERE), false);
    });
  });
});

describe('an upstream that sends an update about a URI taken out of the filter', () => {
  let fake: FakeUpstream;
  let fakeSecond: FakeUpstream;
  let gwFake: TestGateway;
  let gwFakeCatalog: TestGateway;
  const misbehaving = (): Promise<FakeUpstream> => startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string; params: { notifications?: Record<string, unknown> } };
    if (msg.method !== 'subscriptions/listen') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools: [], resultType: 'complete', ttlMs: 0 } }));
      return;
    }
    // Acknowledges what it was asked, then tells of the metadata URI it was never asked about, then of the partner's.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id }, notifications: msg.params.notifications } })}\n\n`);
    for (const uri of [METADATA, PARTNER]) res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id }, uri } })}\n\n`);
  }, { handshake: 'modern', capabilities: { resources: { subscribe: true } } });
  before(async () => {
    fake = await misbehaving();
    fakeSecond = await misbehaving();
    gwFake = await startGateway({ upstreams: [{ name: 'fake', url: fake.url, era: 'modern' }] }, { resolveHost });
    gwFakeCatalog = await startGateway({ upstreams: [{ name: 'fake', url: fake.url, era: 'modern' }, { name: 'second', url: fakeSecond.url, era: 'modern' }] }, { resolveHost });
  });
  after(async () => {
    await gwFakeCatalog?.close();
    await gwFake?.close();
    await fakeSecond?.close();
    await fake?.close();
  });

  /** What a raw listen through `url` receives until the partner's update (sent after the metadata one) is through. */
  async function listenText(url: string): Promise<string> {
    const listen = modernRequest(1, 'subscriptions/listen', { notifications: { resourceSubscriptions: [METADATA, PARTNER] } });
    const ac = new AbortController();
    try {
      const res = await request(url, { method: 'POST', headers: listen.headers, body: listen.body, signal: ac.signal });
      let text = '';
      let chunks = 0;
      for await (const chunk of res.body) {
        text += String(chunk);
        if (text.includes(`"uri":"${PARTNER}"`) || ++chunks > 50) break;
      }
      return text;
    } finally {
      ac.abort();
    }
  }

  for (const [path, gateway] of [['pass-through', () => gwFake], ['catalog', () => gwFakeCatalog]] as const) {
    test(`${path}: the update about the withheld URI is dropped, the other relayed`, async () => {
      const text = await listenText(gateway().url);
      assert.ok(text.includes(`"uri":"${PARTNER}"`), text);
      assert.ok(!text.includes('169.254.169.254'), `nothing about the withheld URI: ${text}`);
    });
  }
});
