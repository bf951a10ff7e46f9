// A stdio child that exits on its own, typically at start (a missing module, a bad flag, a missing API key):
// why is in the last lines it wrote to stderr (2025-11-25/basic/transports.mdx §stdio: "The server MAY write
// UTF-8 strings to its standard error for logging purposes"). Those lines are logged at info, one by one, and
// the exit as a warning; an operator reading warnings only (`log.level: warn`, or an alert on them) saw
// "exited with code 7" and nothing of why. The warning now carries the child's last stderr lines itself.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../helpers/gateway.js';
import { post, rpc } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren, waitUntil } from '../helpers/stdio-children.js';

const gateways = gatewaysCheckedForLeakedChildren();

// Seven lines, the last unterminated: the warning keeps the last five.
const SCRIPT = 'for i in 1 2 3 4 5 6; do echo "line $i" >&2; done; printf "ModuleNotFoundError: No module named mcp" >&2; exit 7';

for (const processes of ['perSession', 'shared'] as const) {
  test(`${processes}: a child that exits at start: the client gets 503 naming the exit code, the operator's warning names it and the last stderr lines`, { timeout: 30_000 }, async () => {
    const gw = await startGateway({ upstreams: [{ name: 'dead', command: ['sh', '-c', SCRIPT], processes, era: 'legacy', restart: { attempts: 1, firstDelayMs: 100 } }] });
    gateways.push(gw);
    const init = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    assert.equal(init.status, 503, init.text);
    assert.equal(init.json().error.data.code, 'GW_ERR_UPSTREAM_EXITED');
    assert.match(init.json().error.message, /exited with code 7/);
    const warning = (): Record<string, unknown> | undefined => gw.logs.find((l) => l.msg === 'stdio upstream exited' && l.level === 'warn');
    assert.ok(await waitUntil(() => warning() !== undefined, 5_000), 'the exit is a warning');
    assert.equal(warning()!.reason, 'exited with code 7');
    assert.deepEqual(warning()!.lastStderr, ['line 3', 'line 4', 'line 5', 'line 6', 'ModuleNotFoundError: No module named mcp']);
  });
}
