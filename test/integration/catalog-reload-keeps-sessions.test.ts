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
import { validateConfigObject } from '../../src/config/load.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { gatewaysCheckedForLeakedChildren, stdioChildPids } from '../helpers/stdio-children.js';

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

test('several upstreams: a reload that changes policy.rules builds a new catalog, whose rules apply at once', { timeout: 30_000 }, async () => {
  const store = sqliteStore();
  const gw = await startGateway({ store, upstreams, shutdown: { graceMs: GRACE_MS } });
  gateways.push(gw);
  await reload(gw, store, { policy: { rules: [{ id: 'no-beta', access: 'deny', tools: ['beta*'] }, { id: 'rest', access: 'allow', tools: ['*'] }] } });
  const line = gw.logs.filter((l) => l.msg === 'config reloaded').at(-1);
  assert.deepEqual(line?.keptUpstreams, ['alpha', 'beta'], 'the upstreams are kept');
  assert.equal(line?.keptCatalog, undefined, 'the catalog is not');
  const client = new Client({ name: 'catalog-reload', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.some((n) => n.startsWith('alpha')), names.join(', '));
    assert.ok(!names.some((n) => n.startsWith('beta')), `the new rule hides beta's tools: ${names.join(', ')}`);
  } finally {
    await client.close();
  }
});
