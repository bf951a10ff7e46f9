// A reload that changes only what does not shape a stdio upstream's child (its `uriPrefixes`, read by the
// catalog alone; `timeouts`, `restart` and `maxSessions`, Gatehouse's own limits around the child) keeps the
// child and its sessions, and applies the new values in place: the running child's next calls are timed by
// the new `timeouts.requestMs`. Before, any change to the entry gave the upstream new children after
// shutdown.graceMs, ending every session on it (404, 2025-11-25/basic/transports.mdx §Session Management)
// and what the server kept for its clients (subscriptions). A change to what the child is made of (`command`,
// `env`, `cwd`, `processes`, `era`, `maxMessageBytes`) still starts new children (stdio-reload-keeps-children.test.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { validateConfigObject } from '../../src/config/load.js';
import { startGateway } from '../helpers/gateway.js';
import { gatewaysCheckedForLeakedChildren, isAlive, stdioChildPids } from '../helpers/stdio-children.js';

const SERVER = fileURLToPath(new URL('../fixtures/upstreams/subscribable-stdio.mjs', import.meta.url));
const GRACE_MS = 200;
const gateways = gatewaysCheckedForLeakedChildren();

type ToolResult = { content: Array<{ text: string }>; isError?: boolean };

test('a reload that changes only uriPrefixes, timeouts, restart and maxSessions of a stdio upstream keeps its child and applies them to it', { timeout: 30_000 }, async () => {
  const store = { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-retune-')), 'gatehouse.db') };
  const entry = (tunables: Record<string, unknown>) => ({ name: 'subs', command: [process.execPath, SERVER], era: 'legacy', ...tunables });
  const before = [entry({ uriPrefixes: ['test://a'], timeouts: { requestMs: 5_000 } })];
  const gw = await startGateway({ store, upstreams: before, shutdown: { graceMs: GRACE_MS } });
  gateways.push(gw);
  const client = new Client({ name: 'retune', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    const named = (suffix: string): string => {
      assert.ok(names.includes(suffix), `the ${suffix} tool is listed: ${names.join(', ')}`);
      return suffix;
    };
    const call = async (suffix: string, args: Record<string, unknown> = {}): Promise<ToolResult> => (await client.callTool({ name: named(suffix), arguments: args })) as ToolResult;
    const pid = JSON.parse((await call('pid')).content[0]!.text) as number;
    // Within the first limit: answered.
    assert.ok(!(await call('wait', { ms: 600 })).isError, 'a 600 ms call is answered under requestMs 5000');
    const started = stdioChildPids(gw);
    const after = [entry({ uriPrefixes: ['test://b'], timeouts: { requestMs: 300 }, restart: { attempts: 2, firstDelayMs: 100 }, maxSessions: 4 })];
    const next = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, store, upstreams: after, shutdown: { graceMs: GRACE_MS } }, 'test');
    assert.deepEqual(await gw.gateway.reload(next), []);
    await new Promise((r) => setTimeout(r, GRACE_MS * 3));
    assert.deepEqual(gw.logs.filter((l) => l.msg === 'config reloaded').at(-1)?.keptUpstreams, ['subs'], 'the reload kept the upstream');
    // On the same session (no 404), by the same child.
    assert.equal(JSON.parse((await call('pid')).content[0]!.text), pid, 'the same child serves the session after the reload');
    assert.ok(isAlive(pid));
    assert.deepEqual(stdioChildPids(gw), started, 'no child was started by the reload');
    // The new limit applies to the running child: the same call now times out.
    await assert.rejects(call('wait', { ms: 600 }), /did not answer within 300 ms/, 'a 600 ms call is cut at the new requestMs 300');
  } finally {
    await client.close();
  }
});

// The new values are taken once the new config runs: a reload refused while it is built (after the stdio
// upstream was taken over) leaves the running config's limits on the running child.
test('a reload refused as it is built leaves the kept stdio upstream\'s limits as they were', { timeout: 30_000 }, async () => {
  const store = { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-retune-')), 'gatehouse.db') };
  const upstreams = [{ name: 'subs', command: [process.execPath, SERVER], era: 'legacy', timeouts: { requestMs: 5_000 } }];
  const gw = await startGateway({ store, upstreams, shutdown: { graceMs: GRACE_MS } });
  gateways.push(gw);
  const client = new Client({ name: 'retune', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  try {
    // Building the second upstream throws: a config object handed to reload() without the schema's defaults
    // (as an embedder may), its clientCredentials lacking `scopes`.
    const unbuildable = validateConfigObject({ auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 }, store, shutdown: { graceMs: GRACE_MS }, upstreams: [{ ...upstreams[0], timeouts: { requestMs: 300 } }, { name: 'broken', url: 'http://127.0.0.1:1/mcp', era: 'legacy', clientCredentials: { tokenUrl: 'http://127.0.0.1:1/token', clientId: 'id', clientSecret: 'secret' } }] }, 'test');
    delete (unbuildable.upstreams[1] as { clientCredentials?: { scopes?: string[] } }).clientCredentials!.scopes;
    const problems = await gw.gateway.reload(unbuildable);
    assert.ok(problems.some((p) => /could not be built/.test(p)), `the reload is refused as it is built: ${problems.join('\n')}`);
    const answer = (await client.callTool({ name: 'wait', arguments: { ms: 600 } })) as ToolResult;
    assert.ok(!answer.isError, 'a 600 ms call is still answered under the running requestMs 5000');
  } finally {
    await client.close();
  }
});
