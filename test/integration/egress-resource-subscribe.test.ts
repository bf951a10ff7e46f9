// Egress rules on resources/subscribe URIs (2025-11-25 server/resources.mdx §Subscriptions). A server that
// serves a resource by fetching its URI may fetch it to watch it for the updates it promises: until
// 5 December `resources/subscribe { uri: "http://169.254.169.254/latest/meta-data/" }` reached it unjudged,
// since nothing of the resource comes back on a subscribe. Now a subscribe is judged as a resources/read is
// (a URI of a fetched scheme, under the rule covering the upstream that holds it) and refused alike, -32602
// with `data.code` egress_blocked; a custom scheme (test://example-resource) is the server's identifier and
// passes unresolved. Upstream: the v1 SDK's McpServer (legacy era), subscribable, recording every message;
// client: the v1 SDK's, which subscribes with resources/subscribe.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { refusalOf as refusalOfWork, stubResolver, withClient } from '../helpers/egress-judged.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const { resolveHost, resolved } = stubResolver();
const METADATA = 'http://169.254.169.254/latest/meta-data/';
const INSIDE = 'gopher://inside.attacker.test:6379/_INFO';
const PARTNER = 'https://docs.partner.example/a';
const ELSEWHERE = 'https://www.elsewhere.example/';
const TEST_RESOURCE = 'test://example-resource';

let up: V1HttpServer;
/** No egress rules: the defaults alone. */
let gwDefaults: TestGateway;
/** A rule covering the whole upstream: https partner hosts only. */
let gwPartner: TestGateway;
before(async () => {
  up = await startV1HttpServer(
    (server) => {
      for (const uri of [METADATA, INSIDE, PARTNER, ELSEWHERE, TEST_RESOURCE]) server.registerResource(uri, uri, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri, text: `fetched ${uri}` }] }));
      server.server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
    },
    { resources: { subscribe: true } },
  );
  gwDefaults = await startGateway({ upstreams: [{ name: 'up', url: up.url }] }, { resolveHost });
  gwPartner = await startGateway({ upstreams: [{ name: 'up', url: up.url }], policy: { egress: [{ id: 'partner-only', tools: ['up/*'], allow: { hosts: ['*.partner.example'], schemes: ['https'] } }] } }, { resolveHost });
});
after(async () => {
  await gwPartner?.close();
  await gwDefaults?.close();
  await up?.close();
});

const refusalOf = (work: Promise<unknown>) => refusalOfWork(work, 'the subscribe');
/** How many resources/subscribe of `uri` the upstream received. */
const subscribes = (uri: string) => up.messages.filter((m) => m.method === 'resources/subscribe' && m.params?.uri === uri).length;

describe('egress rules on resources/subscribe URIs', () => {
  test('a metadata URI and a gopher: one resolving inside are refused -32602 egress_blocked before the upstream sees them', async () => {
    await withClient('v1', gwDefaults.url, async (client) => {
      const err = await refusalOf(client.subscribeResource(METADATA));
      assert.equal(err.code, -32602);
      assert.equal(err.data?.code, 'egress_blocked');
      assert.equal(err.data?.argument, 'uri');
      assert.equal(err.data?.addressClass, 'metadata');
      assert.match(err.message, /Resource "http:\/\/169\.254\.169\.254\/latest\/meta-data\/": the URI names/);
      const inside = await refusalOf(client.subscribeResource(INSIDE));
      assert.match(inside.message, /inside\.attacker\.test" resolves to 10\.0\.0\.9/);
      assert.deepEqual([subscribes(METADATA), subscribes(INSIDE)], [0, 0]);
    });
  });

  test('a public URI and a custom scheme are subscribed to; the custom scheme is never resolved', async () => {
    await withClient('v1', gwDefaults.url, async (client) => {
      await client.subscribeResource(PARTNER);
      const resolvedBefore = resolved.length;
      await client.subscribeResource(TEST_RESOURCE);
      assert.equal(resolved.length, resolvedBefore);
      assert.deepEqual([subscribes(PARTNER) > 0, subscribes(TEST_RESOURCE) > 0], [true, true]);
    });
  });

  test('the rule covering the upstream (up/*) judges a subscribe as it judges a read', async () => {
    await withClient('v1', gwPartner.url, async (client) => {
      const before = subscribes(ELSEWHERE);
      const err = await refusalOf(client.subscribeResource(ELSEWHERE));
      assert.deepEqual([err.code, err.data?.code, err.data?.rule], [-32602, 'egress_blocked', 'partner-only']);
      const read = await refusalOf(client.readResource(ELSEWHERE));
      assert.deepEqual([read.data?.code, read.data?.rule], ['egress_blocked', 'partner-only'], 'a read of it is refused the same way');
      assert.equal(subscribes(ELSEWHERE), before);
      await client.subscribeResource(PARTNER);
    });
  });
});
