// A stdio upstream closed (the gateway shutting down past shutdown.graceMs, or a reload retiring it) while
// a child it started is still answering its first `initialize`: that child is stopped with the upstream,
// and the initialize fails clearly. Before, the child was in no table yet, so close() did not see it; when
// it answered, its session was added to the closed table, whose sweeper had stopped, and the child ran on
// for as long as the gateway's process did (2026-07-28/basic/transports/stdio.mdx §Shutdown).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { isAlive, stdioChildPids, waitUntil } from '../helpers/stdio-children.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const INITIALIZE_DELAY_MS = 1_500;

const gateways: TestGateway[] = [];
after(() => {
  for (const pid of gateways.flatMap((gw) => stdioChildPids(gw)).filter(isAlive)) process.kill(pid, 'SIGKILL');
});

for (const processes of ['perSession', 'shared'] as const) {
  test(`processes: ${processes}: the gateway closes while a child answers its first initialize: the child is stopped`, { timeout: 30_000 }, async () => {
    const gw = await startGateway({ shutdown: { graceMs: 0 }, upstreams: [{ name: 'fake', command: [process.execPath, FAKE], env: { INITIALIZE_DELAY_MS: String(INITIALIZE_DELAY_MS) }, era: 'legacy', processes }] });
    gateways.push(gw);
    const init = post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }), LEGACY_HEADERS).catch((err: unknown) => err);
    assert.ok(await waitUntil(() => stdioChildPids(gw).length > 0, 5_000), 'a child was started');
    const [child] = stdioChildPids(gw);
    await gw.close();
    await init;
    // Past the child's initialize answer, and a stop's grace.
    await new Promise((r) => setTimeout(r, INITIALIZE_DELAY_MS));
    assert.ok(await waitUntil(() => !isAlive(child!), 6_000), `child ${child} still running after its gateway closed`);
  });
}
