// With several upstreams a legacy client's session is the catalog's (Gatehouse holds it in front of the
// aggregated upstreams). A reload that leaves the catalog's inputs as they were (the same running upstreams,
// their uriPrefixes, tools.naming.prefix, policy.rules) now keeps the catalog, and with it those sessions, the
// subscriptions Gatehouse holds for them, and its cached lists and capabilities. Before, every reload (a rate
// limit added) built a new catalog and ended the old one's sessions after shutdown.graceMs: each legacy client
// got 404 and had to initialize again (2025-11-25/basic/transports.mdx §Session Management). A reload that
// changes those inputs still builds a new catalog, whose rules apply at once.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { validateConfigObject } from '../../src/config/load.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { gatewaysCheckedForLeakedChildren, stdioChildPids, waitUntil } from '../helpers/stdio-children.js';

const SERVER = fileURLToPath(new URL('../fixtures/upstreams/subscribable-stdio.mjs', import.meta.url));
const GRACE_MS = 200;
const gateways = gatewaysCheckedForLeakedChildren();

type ToolResult = { content: Array<{ text: string }>; isError?: boolean };

const upstreams = [
  { name: 'alpha', command: [process.execPath, SERVER], era: 'legacy' },
  { name: 'beta', command: [process.execPath, SERVER], era: 'legacy' },
];

function sqliteStore(): { kind: 'sqlite'; path: string } {
  return { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-catalog-reload-')), 'gatehouse.db') };
}

async function reload(gw: TestGateway, store: unknown, extra: Record<string, unknown>): Promise<void> {
  const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, store, upstreams, shutdown: { graceMs: GRACE_MS }, ...extra }, 'test');
  assert.deepEqual(await gw.gateway.reload(next), []);
  // The retired config has had its grace period, and closed what it alone held.
  await new Promise((r) => setTimeout(r, GRACE_MS * 3));
}

test('several upstreams: a legacy client\'s session survives a reload that leaves the upstreams and the catalog\'s settings as they were', { timeout: 30_000 }, async () => {
  const store = sqliteStore();
  const gw = await startGateway({ store, upstreams, shutdown: { graceMs: GRACE_MS } });
  gateways.push(gw);
  const client = new Client({ name: 'catalog-reload', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    const alphaPid = names.find((n) => n.startsWith('alpha') && n.endsWith('pid'));
    assert.ok(alphaPid, names.join(', '));
    const pid = async (): Promise<number> => JSON.parse(((await client.callTool({ name: alphaPid, arguments: {} })) as ToolResult).content[0]!.text) as number;
    const first = await pid();
    const started = stdioChildPids(gw).length;
    // A change elsewhere in the config: a rate limit added.
    await reload(gw, store, { policy: { rateLimits: [{ id: 'calls', per: 'key', rate: 1000, perSeconds: 60, burst: 1000 }] } });
    // The same session goes on (the SDK client sends its Mcp-Session-Id): no 404, on the same child.
    assert.equal(await pid(), first, 'the session is served after the reload, by the same child');
    assert.equal(stdioChildPids(gw).length, started, 'no child was started');
    assert.equal(gw.logs.filter((l) => l.msg === 'config reloaded').at(-1)?.keptCatalog, true, 'the reload says it kept the catalog');
    // A second reload of the same kind, after the first's retired config closed: still the same session.
    await reload(gw, store, { policy: { rateLimits: [{ id: 'calls', per: 'key', rate: 999, perSeconds: 60, burst: 999 }] } });
    assert.equal(await pid(), first);
  } finally {
    await client.close();
  }
});

// A reload that keeps the same upstreams by name (and tools.naming.prefix) but changes what the catalog is
// built from (a member's entry: a rotated secret in its env; policy.rules) builds a new catalog, which takes
// over the old one's legacy client sessions: the client goes on, served by the new catalog, whose rules apply
// to it at once and whose changed member runs a new child.
test('several upstreams: a legacy client\'s session survives a reload that rebuilds one upstream and changes policy.rules; the new rules apply to it', { timeout: 30_000 }, async () => {
  const store = sqliteStore();
  const gw = await startGateway({ store, upstreams, shutdown: { graceMs: GRACE_MS } });
  gateways.push(gw);
  const client = new Client({ name: 'catalog-reload', version: '1' });
  const updates: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    const named = (member: string, tool: string): string => names.find((n) => n.startsWith(member) && n.endsWith(tool))!;
    const pidTool = (member: string): string => named(member, 'pid');
    const pid = async (member: string): Promise<number> => JSON.parse(((await client.callTool({ name: pidTool(member), arguments: {} })) as ToolResult).content[0]!.text) as number;
    // beta's child announces a change to a URI only while the session's subscription holds there.
    const touchBeta = async (): Promise<boolean> => JSON.parse(((await client.callTool({ name: named('beta', 'touch'), arguments: { name: 'b' } })) as ToolResult).content[0]!.text) as boolean;
    // The subscription reaches the child through the session's listen, opened in the background: polled.
    const heldByBeta = async (): Promise<boolean> => {
      for (let i = 0; i < 50; i++) {
        if (await touchBeta()) return true;
        await new Promise((r) => setTimeout(r, 100));
      }
      return false;
    };
    await client.listResources();
    await client.subscribeResource({ uri: 'test://b' });
    assert.ok(await heldByBeta(), 'beta holds the subscription');
    assert.ok(await waitUntil(() => updates.length === 1, 5_000), 'the update reached the session');
    const alpha = await pid('alpha');
    const beta = await pid('beta');
    // beta's entry changes (a secret rotated into its env): a new beta upstream, so a new catalog.
    const rotated = [upstreams[0], { ...upstreams[1], env: { TOKEN: 'rotated' } }];
    await reload(gw, store, { upstreams: rotated });
    const line = gw.logs.filter((l) => l.msg === 'config reloaded').at(-1);
    assert.deepEqual(line?.keptUpstreams, ['alpha'], 'alpha is kept, beta rebuilt');
    assert.equal(line?.keptCatalog, undefined, 'the catalog is built anew');
    assert.equal(line?.keptCatalogSessions, true, 'and takes over the legacy clients\' sessions');
    // The same session (no 404): alpha on its child, beta on a new one.
    assert.equal(await pid('alpha'), alpha, 'the session goes on, alpha on the same child');
    assert.notEqual(await pid('beta'), beta, 'beta runs a new child');
    // The session's listen moved to the new catalog, with its subscription: the new child holds it too.
    assert.ok(await heldByBeta(), 'the subscription is held by beta\'s new child');
    // An update sent while the client's GET stream is being opened again can be lost (a legacy stream is not
    // replayed): the child is touched again until one arrives, a bounded number of times (the intermediate
    // CI of 5 December, under load, saw the first one lost).
    const updatedAgain = async (): Promise<boolean> => {
      for (let i = 0; i < 20; i++) {
        if (await waitUntil(() => updates.length >= 2, 500)) return true;
        await touchBeta();
      }
      return false;
    };
    assert.ok(await updatedAgain(), 'its update reached the session');
    // Rules change: the session goes on, and the new rules hold for it at once.
    await reload(gw, store, { upstreams: rotated, policy: { rules: [{ id: 'no-beta', access: 'deny', tools: ['beta*'] }, { id: 'rest', access: 'allow', tools: ['*'] }] } });
    assert.equal(await pid('alpha'), alpha, 'the session goes on after the rules changed');
    const listed = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(!listed.some((n) => n.startsWith('beta')), `the new rule hides beta's tools from the session: ${listed.join(', ')}`);
    const refused = (await client.callTool({ name: pidTool('beta'), arguments: {} }).catch((err: Error) => ({ isError: true, content: [{ text: err.message }] }))) as ToolResult;
    assert.ok(refused.isError, `a call to beta is refused under the new rule: ${JSON.stringify(refused)}`);
  } finally {
    await client.close();
  }
});
