// A stdio command that cannot be spawned at all (not installed: ENOENT) is restarted as one that exits at
// once is: `restart.attempts` tries after the first, each delay doubling, then calls fail at once until the
// longest delay has passed (src/upstream/README.md §stdio; 2026-07-28/basic/transports/stdio.mdx
// §Unexpected Termination: restart with backoff). Until 4 December each failed spawn was counted twice (once
// as the child's exit, once as the start's failure): the backoff doubled twice per try, `restart.attempts: 3`
// gave up after 2 tries, and the operator's log said every crash twice.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../helpers/gateway.js';
import { post, rpc } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

const gateways = gatewaysCheckedForLeakedChildren();
const ATTEMPTS = 3;

for (const [what, command] of [['a command that is not installed', ['/nonexistent/mcp-server']], ['a command that exits at once', ['sh', '-c', 'exit 3']]] as const) {
  for (const processes of ['perSession', 'shared', 'single'] as const) {
    test(`${processes}: ${what} is tried ${ATTEMPTS + 1} times (restart.attempts: ${ATTEMPTS}) before calls fail at once`, { timeout: 30_000 }, async () => {
      const gw = await startGateway({ upstreams: [{ name: 'gone', command: [...command], processes, era: 'legacy', restart: { attempts: ATTEMPTS, firstDelayMs: 50 } }] });
      gateways.push(gw);
      // Calls until they are refused at once (each call may start a try, or wait out a backoff first).
      let refusal: string | undefined;
      for (let i = 0; i < 12 && refusal === undefined; i++) {
        const res = await post(gw.url, rpc(i, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
        assert.equal(res.status, 503, res.text);
        assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_EXITED');
        const message = res.json().error.message as string;
        if (/could not be restarted after/.test(message)) refusal = message;
      }
      assert.ok(refusal !== undefined, 'calls are refused at once in the end');
      // One try is one spawn: a child started (that then exits), or a spawn that failed.
      const tries = gw.logs.filter((l) => l.msg === 'stdio upstream started' || (l.msg === 'stdio upstream child is gone; the next call starts a new one after a backoff' && /could not (be )?start/.test(String(l.reason)))).length;
      assert.equal(tries, ATTEMPTS + 1, `${tries} tries before: ${refusal}`);
      const counted = gw.logs.filter((l) => l.msg === 'stdio upstream child is gone; the next call starts a new one after a backoff').map((l) => l.crashes);
      assert.deepEqual(counted, [1, 2, 3, 4], 'each failed try is one crash in the log');
    });
  }
}
