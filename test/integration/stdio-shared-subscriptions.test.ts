// `processes: shared` (and `single`): a legacy client's resources/subscribe reaches the stdio child, and the
// child's notifications/resources/updated reaches the sessions that subscribed to that URI, and only those
// (2025-11-25/server/resources.mdx §Subscriptions; GATEWAY-REQUIREMENTS §9, §16.1 "resources/subscribe each
// URI (ref-counted) ... On close: resources/unsubscribe when refcount hits 0"). This held already when
// checked (5 December): the shared bridge makes a session's subscriptions its listen's filter, and the
// listen hub of the pooled session on the child subscribes each URI once (listen-hub.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startGateway } from '../helpers/gateway.js';
import { gatewaysCheckedForLeakedChildren, waitUntil } from '../helpers/stdio-children.js';

const SERVER = fileURLToPath(new URL('../fixtures/upstreams/subscribable-stdio.mjs', import.meta.url));
const gateways = gatewaysCheckedForLeakedChildren();

interface Subscriber {
  client: Client;
  transport: StreamableHTTPClientTransport;
  updates: string[];
}

async function connect(url: string): Promise<Subscriber> {
  const client = new Client({ name: 'sub', version: '1' });
  const updates: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, transport, updates };
}

async function tool(c: Client, name: string, args: Record<string, unknown> = {}): Promise<unknown> {
  const result = (await c.callTool({ name, arguments: args })) as { content: Array<{ text: string }>; isError?: boolean };
  assert.ok(!result.isError, `${name}: ${result.content[0]?.text}`);
  return JSON.parse(result.content[0]!.text);
}

for (const processes of ['shared', 'single'] as const) {
  test(`processes: ${processes}: resources/subscribe reaches the child, updates reach the subscribed sessions only, the last unsubscribe goes up`, { timeout: 30_000 }, async () => {
    const gw = await startGateway({ upstreams: [{ name: 'subs', command: [process.execPath, SERVER], era: 'legacy', processes }] });
    gateways.push(gw);
    const a = await connect(gw.url);
    const b = await connect(gw.url);
    const c = await connect(gw.url);
    try {
      assert.equal(a.client.getServerCapabilities()?.resources?.subscribe, true, 'the subscribe capability is offered');
      await a.client.subscribeResource({ uri: 'test://a' });
      await b.client.subscribeResource({ uri: 'test://a' });
      await c.client.subscribeResource({ uri: 'test://b' });
      // The child was told (the subscriptions go up on each session's listen, which may take a moment).
      let seen: unknown;
      for (let i = 0; i < 50; i++) {
        seen = await tool(a.client, 'subscribed');
        if (JSON.stringify(seen) === JSON.stringify(['test://a', 'test://b'])) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(seen, ['test://a', 'test://b'], 'the child holds the URIs the sessions subscribed to');
      assert.equal(await tool(a.client, 'touch', { name: 'a' }), true);
      assert.ok(await waitUntil(() => a.updates.length > 0 && b.updates.length > 0, 5_000), `updates of test://a reached both subscribers (a: ${a.updates}, b: ${b.updates})`);
      assert.deepEqual(a.updates, ['test://a']);
      assert.deepEqual(b.updates, ['test://a']);
      assert.deepEqual(c.updates, [], 'a session not subscribed to test://a hears nothing of it');
      // One of two subscribers leaves test://a: still subscribed upstream; the second leaves: unsubscribed.
      await a.client.unsubscribeResource({ uri: 'test://a' });
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(await tool(a.client, 'subscribed'), ['test://a', 'test://b']);
      await b.client.unsubscribeResource({ uri: 'test://a' });
      for (let i = 0; i < 50; i++) {
        seen = await tool(a.client, 'subscribed');
        if (JSON.stringify(seen) === JSON.stringify(['test://b'])) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(seen, ['test://b'], 'the last unsubscribe from test://a went up');
      // The only subscriber to test://b ends its session (DELETE): the child is told to unsubscribe.
      await c.transport.terminateSession();
      for (let i = 0; i < 50; i++) {
        seen = await tool(a.client, 'subscribed');
        if (JSON.stringify(seen) === '[]') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(seen, [], 'a session that ended took its subscriptions with it');
    } finally {
      await Promise.all([a, b, c].map((s) => s.client.close()));
    }
  });
}
