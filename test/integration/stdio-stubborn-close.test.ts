// A stdio child that ignores the end of its stdin and SIGTERM (2025-11-25/basic/transports.mdx §stdio,
// lifecycle.mdx §Shutdown: close stdin, then SIGTERM, then SIGKILL if it has not exited). Whatever the
// `processes` mode, the gateway's close resolves (and logs `stopped`) only once every child is gone: until
// 4 December, in `shared` and `single`, the bridge's pooled sessions were given 1 s to end, and the close
// resolved with the child still running, its SIGKILL still 3 s away (an embedder's close, or a supervisor
// reading `stopped` as done, left it running).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren, isAlive, stdioChildPids } from '../helpers/stdio-children.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const gateways = gatewaysCheckedForLeakedChildren();

for (const processes of ['shared', 'single', 'perSession'] as const) {
  test(`${processes}: a child that ignores SIGTERM is killed before the gateway's close resolves`, { timeout: 30_000 }, async () => {
    const gw = await startGateway({ upstreams: [{ name: 'stubborn', command: [process.execPath, FAKE], env: { STUBBORN: '1' }, era: 'legacy', processes }] });
    gateways.push(gw);
    const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    assert.equal(init.status, 200, init.text);
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) };
    const call = await post(gw.url, rpc(1, 'tools/call', { name: 'echo' }), headers);
    assert.equal(call.status, 200, call.text);
    const pids = stdioChildPids(gw);
    assert.ok(pids.length > 0 && pids.every(isAlive));
    await gw.close();
    assert.deepEqual(pids.filter(isAlive), [], 'children still running when the gateway said it had stopped');
    assert.ok(gw.logs.some((l) => l.msg === 'stdio upstream stopped' && l.reason === 'killed by SIGKILL'));
    const stoppedAt = gw.logs.findIndex((l) => l.msg === 'stopped');
    const killedAt = gw.logs.findIndex((l) => l.msg === 'stdio upstream stopped' && l.reason === 'killed by SIGKILL');
    assert.ok(killedAt < stoppedAt, 'the gateway logged "stopped" before its child was gone');
  });
}
