// A stdio server slower to answer its `initialize` than `timeouts.requestMs` (a server fetched by npx on
// its first run, a JVM starting): each child Gatehouse started for a legacy session (the era probe's, a
// bridged session's) and gave up on stayed in its session table, running, with no one to stop it but
// shutdown. Until 4 December every call started two more: 4 calls left 9 children running. A session whose
// initialize fails is now ended (2025-11-25/basic/transports.mdx §Session Management: a client that no longer
// needs a session SHOULD end it), its child stopped (2026-07-28/basic/transports/stdio.mdx §Shutdown).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren, liveStdioChildren, stdioChildPids, waitUntil } from '../helpers/stdio-children.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const CALLS = 4;

const gateways = gatewaysCheckedForLeakedChildren();

test(`a server that answers initialize after requestMs: ${CALLS} calls time out, and the children started for them are stopped`, { timeout: 60_000 }, async () => {
  // The session-less child (the one the era probe asks server/discover on) is kept until it idles out,
  // after a second here; the others have no such timeout.
  const gw = await startGateway({ sessions: { idleTimeoutMs: 1_000 }, upstreams: [{ name: 'slow', command: [process.execPath, FAKE], env: { INITIALIZE_DELAY_MS: '3000' }, era: 'legacy', processes: 'shared', timeouts: { requestMs: 500 } }] });
  gateways.push(gw);
  for (let i = 0; i < CALLS; i++) {
    const req = modernRequest(i, 'tools/call', { name: 'echo', arguments: {} });
    const res = await post(gw.url, req.body, req.headers, AbortSignal.timeout(15_000));
    assert.equal(res.status, 504, res.text);
    assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_TIMEOUT');
  }
  const started = stdioChildPids(gw).length;
  assert.ok(started >= CALLS, `children started: ${started}`);
  // Each is stopped (stdin closed, then SIGTERM after its grace), the session-less one once idle: none runs on.
  assert.ok(await waitUntil(() => liveStdioChildren(gw).length === 0, 10_000), `children still running: ${liveStdioChildren(gw).length} of ${started} started`);
});
