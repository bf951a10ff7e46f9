// An upstream whose `cwd` does not exist, or is a file: the child cannot start. Node's error then names
// the command (`spawn /usr/bin/node ENOENT`), which is there: the operator looks for a missing program
// (2025-11-25/basic/transports.mdx §stdio: the client launches the server as a subprocess). The client's
// error and the log now say that the working directory is what is wrong, without its path (a client of
// the gateway is not told the host's layout).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway } from '../helpers/gateway.js';
import { post, rpc } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

const gateways = gatewaysCheckedForLeakedChildren();
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cwd-'));
const aFile = join(dir, 'a-file');
writeFileSync(aFile, 'x');

for (const [cwd, problem] of [[join(dir, 'missing'), /working directory \(cwd\) does not exist/], [aFile, /working directory \(cwd\) is not a directory/]] as const) {
  for (const processes of ['perSession', 'shared'] as const) {
    test(`${processes}: cwd ${cwd === aFile ? 'a file' : 'missing'}: the error says the working directory is wrong, not the command`, { timeout: 30_000 }, async () => {
      const gw = await startGateway({ upstreams: [{ name: 'nowhere', command: [process.execPath, '-e', '0'], cwd, processes, era: 'legacy' }] });
      gateways.push(gw);
      const res = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
      assert.equal(res.status, 503, res.text);
      assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_EXITED');
      assert.match(res.json().error.message, problem);
      assert.doesNotMatch(res.text, /ENOENT|gatehouse-cwd-/, 'neither the misleading spawn error nor the host\'s path reaches the client');
      assert.ok(gw.logs.some((l) => problem.test(String(l.reason))), 'the operator is told too');
    });
  }
}
