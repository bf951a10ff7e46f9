// A stdio child that closes its stdout and runs on (a server that closed the wrong descriptor, or whose
// writer thread died). Its process is alive, but nothing it does can reach Gatehouse again: stdout is the
// only way a stdio server speaks (2025-11-25/basic/transports.mdx §stdio: "The server writes messages to its
// standard output"), so the session is over (§Shutdown: the client may end the server's process). The calls
// in flight fail at once, naming what happened, rather than each waiting for `timeouts.requestMs`; the child
// is stopped, not left running; and, as after a crash, the next call gets a new child.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren, isAlive, stdioChildPids, waitUntil } from '../helpers/stdio-children.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
/** Far longer than the test waits: a call still waiting on the deaf stdout would hold its client this long. */
const REQUEST_MS = 60_000;

const gateways = gatewaysCheckedForLeakedChildren();

describe('a child that closes stdout and keeps running', () => {
  for (const processes of ['perSession', 'shared'] as const) {
    test(`${processes}: the call in flight fails at once with 503 GW_ERR_UPSTREAM_EXITED, the child is stopped, the next call gets a new one`, { timeout: 30_000 }, async () => {
      const gw = await startGateway({ upstreams: [{ name: 'fake', command: [process.execPath, FAKE], era: 'legacy', processes, restart: { attempts: 3, firstDelayMs: 100 }, timeouts: { requestMs: REQUEST_MS } }] });
      gateways.push(gw);
      const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
      assert.equal(init.status, 200, init.text);
      const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) };
      const first = await post(gw.url, rpc(1, 'tools/call', { name: 'echo' }), headers);
      assert.equal(first.status, 200, first.text);
      const [pid] = stdioChildPids(gw).slice(-1);
      assert.ok(pid !== undefined);

      // Bounded by 15 s, far short of the call's own limit (REQUEST_MS): a call that waited on the deaf stdout
      // is aborted there and fails the test; only the closed output, named in the answer, can end it first.
      const closed = await post(gw.url, rpc(2, 'tools/call', { name: 'close-stdout' }), headers, AbortSignal.timeout(15_000)).catch((err: Error) => assert.fail(`the call waited on a child that can no longer answer: ${err.message}`));
      assert.equal(closed.status, 503, closed.text);
      const error = closed.json().error;
      assert.equal(error.data.code, 'GW_ERR_UPSTREAM_EXITED');
      assert.match(error.message, /closed its output/);
      assert.ok(await waitUntil(() => !isAlive(pid), 10_000), `child ${pid}, its stdout closed, was left running`);
      // The warning waits (briefly) for the end of the child's stderr, to carry its last lines.
      assert.ok(await waitUntil(() => gw.logs.some((l) => l.msg === 'stdio upstream exited' && /closed its output/.test(String(l.reason))), 2_000), 'the operator is told why');

      const next = await post(gw.url, rpc(3, 'tools/call', { name: 'echo' }), headers);
      assert.equal(next.status, 200, next.text);
      assert.equal(next.json().result !== undefined, true, next.text);
    });
  }
});
