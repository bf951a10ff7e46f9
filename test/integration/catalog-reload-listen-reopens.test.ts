// A legacy client's resource subscription across a reload that builds a new catalog over the same upstreams
// (policy.rules changed): the session is handed over (catalog/legacy-front.ts) and the listen carrying its
// subscriptions is ended on the old catalog, for the bridge to open it again on the new one, from the new
// catalog's discover result. Until 5 December that result was built only by the first legacy request to
// reach the new catalog: a client that only listened (2025-11-25 server/resources.mdx §Subscriptions:
// it waits for notifications/resources/updated) was never heard again, the bridge asking again after a pause
// doubling to 30 s and finding no result each time. Now the old listens end once the new catalog has built it.
// Upstreams: two v1 SDK servers over Streamable HTTP (legacy era, subscribable); client: the v1 SDK's.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema, SubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { McpServer as V1McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { validateConfigObject } from '../../src/config/load.js';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const WATCHED = 'test://watched';
const sessions: V1McpServer[] = [];
let files: V1HttpServer;
let more: V1HttpServer;
let gw: TestGateway;

const upstreams = (): Array<Record<string, unknown>> => [{ name: 'files', url: files.url }, { name: 'more', url: more.url }];
const rules = [{ id: 'all', access: 'allow', tools: ['*'], resources: ['*'] }];

before(async () => {
  files = await startV1HttpServer(
    (server) => {
      server.registerResource(WATCHED, WATCHED, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri: WATCHED, text: 'w' }] }));
      server.server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
      sessions.push(server);
    },
    { resources: { subscribe: true } },
  );
  more = await startV1HttpServer(() => {}, { resources: { subscribe: true } });
  gw = await startGateway({ upstreams: upstreams(), policy: { rules } });
});
after(async () => {
  await gw?.close();
  await more?.close();
  await files?.close();
});

/** Sends updates of WATCHED from every session until `heard` has `count` of them (bounded: 150 rounds). */
async function updatesUntilHeard(heard: string[], count: number): Promise<void> {
  for (let i = 0; i < 150 && heard.length < count; i++) {
    for (const server of sessions) if (server.isConnected()) await server.server.sendResourceUpdated({ uri: WATCHED }).catch(() => {});
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('a client that only listens hears its subscription again after a reload that built a new catalog', { timeout: 60_000 }, async () => {
  const client = new V1Client({ name: 'listener', version: '1' });
  const heard: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void heard.push(n.params.uri));
  await client.connect(new V1Transport(new URL(gw.url)));
  try {
    await client.subscribeResource({ uri: WATCHED });
    await updatesUntilHeard(heard, 1);
    assert.equal(heard.length > 0, true, 'heard before the reload');
    // The rules change (a tool hidden), so the catalog is built anew and takes the session over.
    const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, upstreams: upstreams(), policy: { rules: [{ id: 'no-more', access: 'deny', tools: ['more*'] }, ...rules] } }, 'test');
    assert.deepEqual(await gw.gateway.reload(next), []);
    assert.equal(gw.logs.filter((l) => l.msg === 'config reloaded').at(-1)?.keptCatalogSessions, true, 'the new catalog took the session over');
    // The client sends nothing more: it only listens.
    const before = heard.length;
    await updatesUntilHeard(heard, before + 1);
    assert.ok(heard.length > before, 'the subscription is heard again on the new catalog');
  } finally {
    await client.close();
  }
});
