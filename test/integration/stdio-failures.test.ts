// A stdio upstream that misbehaves: stderr goes to the log, non-JSON output is contained, and a crash
// mid-call becomes a clear error and ends the session (2025-11-25/basic/transports.mdx §stdio,
// §Session Management 3: an ended session answers 404).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const gw = await startGateway({ upstreams: [{ name: 'fake', command: [process.execPath, FAKE] }] });
after(() => gw.close());

async function openSession(): Promise<string> {
  const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
  assert.equal(init.status, 200);
  assert.equal(init.json().result.protocolVersion, '2025-06-18');
  return String(init.headers['mcp-session-id']);
}

test('stderr reaches the log and a non-JSON stdout line is logged and skipped, not fatal', async () => {
  const session = await openSession();
  const res = await post(gw.url, rpc(1, 'tools/call', { name: 'noisy' }), { ...LEGACY_HEADERS, 'mcp-session-id': session });
  assert.equal(res.status, 200);
  assert.match(res.json().result.content[0].text, /^pid \d+$/);
  assert.ok(gw.logs.some((l) => l.msg === 'stdio upstream stderr' && l.line === 'a line for the operator'));
  assert.ok(gw.logs.some((l) => l.msg === 'stdio upstream wrote a line that is not JSON; ignored' && l.line === 'this is not JSON'));
});

test('a crash mid-call fails the call with 503 GW_ERR_UPSTREAM_EXITED, then the session is gone (404 -32001)', async () => {
  const session = await openSession();
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session };
  const res = await post(gw.url, rpc(9, 'tools/call', { name: 'crash' }), headers);
  assert.equal(res.status, 503);
  assert.equal(res.json().id, 9);
  assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_EXITED');
  assert.match(res.json().error.message, /exited with code 3/);
  const after = await post(gw.url, rpc(10, 'tools/list'), headers);
  assert.equal(after.status, 404);
  assert.equal(after.json().error.code, -32001);
  // A new session gets a fresh process and works.
  const fresh = await openSession();
  const ok = await post(gw.url, rpc(11, 'tools/call', { name: 'echo' }), { ...LEGACY_HEADERS, 'mcp-session-id': fresh });
  assert.equal(ok.status, 200);
});

test('a command that cannot be started is a clear 503 on initialize and /readyz says not ready', async () => {
  const broken = await startGateway({ upstreams: [{ name: 'ghost', command: ['/nonexistent/mcp-server'] }] });
  try {
    const init = await post(broken.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    assert.equal(init.status, 503);
    assert.equal(init.json().error.data.code, 'GW_ERR_UPSTREAM_EXITED');
    assert.match(init.json().error.message, /could not be started: spawn \/nonexistent\/mcp-server ENOENT/);
    const ready = await fetch(`${broken.origin}/readyz`);
    assert.equal(ready.status, 503);
  } finally {
    await broken.close();
  }
});

test('requests without a session, or with an unknown one, are refused clearly', async () => {
  const none = await post(gw.url, rpc(1, 'tools/list'));
  assert.equal(none.status, 400);
  assert.match(none.json().error.message, /Mcp-Session-Id header is required/);
  const unknown = await post(gw.url, rpc(1, 'tools/list'), { ...LEGACY_HEADERS, 'mcp-session-id': 'nope' });
  assert.equal(unknown.status, 404);
  assert.equal(unknown.json().error.data.details.reason, 'unknown');
});
