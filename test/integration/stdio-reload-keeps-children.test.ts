// A config reload keeps the stdio children of every upstream whose config it leaves unchanged: their
// sessions, what the server holds for them (subscriptions) and the calls in flight go on, and only the
// children of changed or removed upstreams are stopped (the new config's are started on demand). Before,
// every reload (a rate limit added, a key rotated, another upstream edited) retired every stdio upstream:
// after `shutdown.graceMs` its children were killed, calls still running failed, and each client's session
// was gone (404; 2025-11-25/basic/transports.mdx §Session Management: the client must start a new session).

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
import { gatewaysCheckedForLeakedChildren, isAlive, stdioChildPids, waitUntil } from '../helpers/stdio-children.js';

const SERVER = fileURLToPath(new URL('../fixtures/upstreams/subscribable-stdio.mjs', import.meta.url));
const GRACE_MS = 200;
const gateways = gatewaysCheckedForLeakedChildren();

async function connect(url: string): Promise<{ client: Client; updates: string[] }> {
  const client = new Client({ name: 'reload', version: '1' });
  const updates: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { client, updates };
}

async function tool(c: Client, name: string, args: Record<string, unknown> = {}): Promise<unknown> {
  const result = (await c.callTool({ name, arguments: args })) as { content: Array<{ text: string }>; isError?: boolean };
  assert.ok(!result.isError, `${name}: ${result.content[0]?.text}`);
  return JSON.parse(result.content[0]!.text);
}

/** A SQLite file of the test's own, named again by its reloads (a changed store would need a restart). */
function sqliteStore(): { kind: 'sqlite'; path: string } {
  return { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-reload-keep-')), 'gatehouse.db') };
}

/** Reloads `gw` with `config` (a raw config as startGateway takes it), keeping its store; fails on problems. */
async function reload(gw: TestGateway, config: Record<string, unknown>, store: unknown): Promise<void> {
  const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, store, ...config }, 'test');
  assert.deepEqual(await gw.gateway.reload(next), []);
}


for (const processes of ['shared', 'single', 'perSession'] as const) {
  test(`processes: ${processes}: a reload that changes no upstream keeps the child, its sessions, its subscriptions and the calls in flight`, { timeout: 30_000 }, async () => {
    const store = sqliteStore();
    const upstreams = [{ name: 'subs', command: [process.execPath, SERVER], era: 'legacy', processes }];
    const gw = await startGateway({ store, upstreams, shutdown: { graceMs: GRACE_MS } });
    gateways.push(gw);
    const a = await connect(gw.url);
    try {
      const pid = (await tool(a.client, 'pid')) as number;
      await a.client.subscribeResource({ uri: 'test://a' });
      const started = stdioChildPids(gw);
      // A call that runs well past the retired runtime's grace period.
      const slow = tool(a.client, 'wait', { ms: GRACE_MS * 6 });
      await new Promise((r) => setTimeout(r, 100));
      // A change elsewhere in the config: a rate limit added.
      await reload(gw, { upstreams, shutdown: { graceMs: GRACE_MS }, policy: { rateLimits: [{ id: 'calls', per: 'key', rate: 1000, perSeconds: 60, burst: 1000 }] } }, store);
      assert.equal(await slow, pid, 'the call in flight at the reload is answered, by the same child');
      await new Promise((r) => setTimeout(r, GRACE_MS * 2));
      // The same session goes on (no 404), on the same child, which still holds the subscription.
      assert.equal(await tool(a.client, 'pid'), pid, 'the same child serves the session after the reload');
      assert.ok(isAlive(pid));
      assert.deepEqual(stdioChildPids(gw), started, 'no child was started by the reload');
      assert.equal(await tool(a.client, 'touch', { name: 'a' }), true, 'the child still holds the subscription');
      assert.ok(await waitUntil(() => a.updates.includes('test://a'), 5_000), 'the update reached the session');
    } finally {
      await a.client.close();
    }
  });
}

test('a reload that changes one stdio upstream and removes another restarts those two only', { timeout: 30_000 }, async () => {
  const store = sqliteStore();
  const upstream = (name: string, env: Record<string, string> = {}) => ({ name, command: [process.execPath, SERVER], era: 'legacy', env });
  const before = [upstream('kept'), upstream('changed', { GENERATION: '1' }), upstream('removed')];
  const gw = await startGateway({ store, upstreams: before, shutdown: { graceMs: GRACE_MS } });
  gateways.push(gw);
  const pids = async (names: string[]): Promise<Record<string, number>> => {
    const c = await connect(gw.url);
    try {
      const tools = (await c.client.listTools()).tools.map((t) => t.name);
      const out: Record<string, number> = {};
      for (const name of names) {
        const pidTool = tools.find((t) => t.startsWith(name) && t.endsWith('pid'));
        assert.ok(pidTool, `${name}'s pid tool is listed: ${tools.join(', ')}`);
        out[name] = (await tool(c.client, pidTool)) as number;
      }
      return out;
    } finally {
      await c.client.close();
    }
  };
  const first = await pids(['kept', 'changed', 'removed']);
  await reload(gw, { upstreams: [upstream('kept'), upstream('changed', { GENERATION: '2' })], shutdown: { graceMs: GRACE_MS } }, store);
  const second = await pids(['kept', 'changed']);
  assert.equal(second.kept, first.kept, 'the unchanged upstream keeps its child');
  assert.notEqual(second.changed, first.changed, 'the changed upstream has a new child');
  assert.ok(await waitUntil(() => !isAlive(first.changed!) && !isAlive(first.removed!), 5_000), 'the children of the changed and the removed upstream are stopped after the grace period');
  assert.ok(isAlive(first.kept!), 'the kept child runs on');
  assert.deepEqual(gw.logs.find((l) => l.msg === 'config reloaded')?.keptUpstreams, ['kept'], 'the reload says which upstreams it kept');
});

// A reload refused while it is built takes back its hold on the upstreams it shared with the running config:
// counted twice, the running child would outlive its config; let go twice, the next reload's retirement of the
// old config would stop the child the new one serves with.
test('a refused reload leaves the kept child held once: later reloads neither stop it nor leak it', { timeout: 30_000 }, async () => {
  const store = sqliteStore();
  const upstreams = [{ name: 'subs', command: [process.execPath, SERVER], era: 'legacy' }];
  const gw = await startGateway({ store, upstreams, shutdown: { graceMs: GRACE_MS } });
  gateways.push(gw);
  const a = await connect(gw.url);
  try {
    const pid = (await tool(a.client, 'pid')) as number;
    // Building the second upstream throws, after the stdio one was taken over: a config object handed to
    // reload() without the schema's defaults (as an embedder may), its clientCredentials lacking `scopes`.
    const unbuildable = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, store, shutdown: { graceMs: GRACE_MS }, upstreams: [...upstreams, { name: 'broken', url: 'http://127.0.0.1:1/mcp', era: 'legacy', clientCredentials: { tokenUrl: 'http://127.0.0.1:1/token', clientId: 'id', clientSecret: 'secret' } }] }, 'test');
    delete (unbuildable.upstreams[1] as { clientCredentials?: { scopes?: string[] } }).clientCredentials!.scopes;
    const problems = await gw.gateway.reload(unbuildable);
    assert.ok(problems.some((p) => /could not be built/.test(p)), `the reload is refused as it is built: ${problems.join('\n')}`);
    for (const graceMs of [GRACE_MS + 1, GRACE_MS + 2]) {
      await reload(gw, { upstreams, shutdown: { graceMs } }, store);
      await new Promise((r) => setTimeout(r, GRACE_MS * 2));
      assert.equal(await tool(a.client, 'pid'), pid, 'the same child serves the session after the retired config closed');
    }
  } finally {
    await a.client.close();
  }
});
