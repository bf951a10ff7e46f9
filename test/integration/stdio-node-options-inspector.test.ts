// NODE_OPTIONS is one of the variables a stdio child inherits from Gatehouse (docs/configuration.md,
// upstreams[].env): a child that is a Node program reads it. An operator debugging Gatehouse
// (NODE_OPTIONS=--inspect-brk) made every such child wait for a debugger before running a line: each
// initialize timed out, every Node server was "down". And --inspect on a fixed port had each child fight
// Gatehouse for it. The inspector's flags are Gatehouse's own: they are left out of what a child inherits,
// and the rest of NODE_OPTIONS (a heap size, a CA option) still reaches it.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { post, rpc, LEGACY_HEADERS } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

const REPORT = fileURLToPath(new URL('../fixtures/upstreams/env-report-stdio.mjs', import.meta.url));
const gateways = gatewaysCheckedForLeakedChildren();

// Gatehouse runs in this process: its environment is this one. Restored after.
const saved = process.env.NODE_OPTIONS;
after(() => {
  if (saved === undefined) delete process.env.NODE_OPTIONS;
  else process.env.NODE_OPTIONS = saved;
});

for (const [given, inherited] of [
  ['--inspect-brk=127.0.0.1:0 --max-old-space-size=300', '--max-old-space-size=300'],
  ['--inspect --inspect-port=0 --inspect-wait=127.0.0.1:0', undefined],
] as const) {
  test(`Gatehouse under NODE_OPTIONS="${given}": a Node child starts and serves, inheriting ${inherited === undefined ? 'no NODE_OPTIONS' : `"${inherited}"`}`, { timeout: 30_000 }, async () => {
    process.env.NODE_OPTIONS = given;
    const gw = await startGateway({ upstreams: [{ name: 'report', command: [process.execPath, REPORT], era: 'legacy', processes: 'perSession', timeouts: { requestMs: 5_000 } }] });
    gateways.push(gw);
    const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    assert.equal(init.status, 200, `the child never answered its initialize: ${init.text}`);
    const res = await post(gw.url, rpc(1, 'tools/call', { name: 'env' }), { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) });
    assert.equal(res.status, 200, res.text);
    const env = JSON.parse(res.json().result.content[0].text as string) as Record<string, string>;
    assert.equal(env.NODE_OPTIONS, inherited);
  });
}
