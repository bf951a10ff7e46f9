// A stdio upstream that misbehaves: stderr goes to the log, non-JSON output is contained, and a crash
// mid-call becomes a clear error and ends the session (2025-11-25/basic/transports.mdx §stdio,
// §Session Management 3: an ended session answers 404).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

test('a crash mid-call fails that call with 503 GW_ERR_UPSTREAM_EXITED; the child is restarted and the next call on the same session works', async () => {
  // 2026-07-28/basic/transports/stdio.mdx §Unexpected Termination: restart, do not lose the session.
  const session = await openSession();
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': session };
  const before = await post(gw.url, rpc(8, 'tools/call', { name: 'echo' }), headers);
  const firstPid = before.json().result.content[0].text;
  const res = await post(gw.url, rpc(9, 'tools/call', { name: 'crash' }), headers);
  assert.equal(res.status, 503);
  assert.equal(res.json().id, 9);
  assert.equal(res.json().error.data.code, 'GW_ERR_UPSTREAM_EXITED');
  assert.match(res.json().error.message, /exited with code 3/);
  const next = await post(gw.url, rpc(10, 'tools/call', { name: 'echo' }), headers);
  assert.equal(next.status, 200, next.text);
  assert.notEqual(next.json().result.content[0].text, firstPid, 'answered by a new process');
  assert.ok(gw.logs.some((l) => l.msg === 'session process restarted'));
  const ready = await fetch(`${gw.origin}/readyz`);
  assert.equal(ready.status, 200, 'ready again once the restart worked');
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

test('server-everything killed mid-call (SIGKILL): the call fails cleanly and the next one succeeds after the restart', async () => {
  const everything = await startGateway({ upstreams: [{ name: 'everything', command: [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'], era: 'legacy' }] });
  try {
    const init = await post(everything.url, rpc(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    const pid = Number(everything.logs.find((l) => l.msg === 'session started')?.pid);
    assert.ok(pid > 0);
    const slow = post(everything.url, rpc(1, 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 5, steps: 5 } }), headers);
    await new Promise((r) => setTimeout(r, 300));
    process.kill(pid, 'SIGKILL');
    const failed = await slow;
    assert.equal(failed.status, 503);
    assert.equal(failed.json().error.data.code, 'GW_ERR_UPSTREAM_EXITED');
    const next = await post(everything.url, rpc(2, 'tools/call', { name: 'echo', arguments: { message: 'after the restart' } }), headers);
    assert.equal(next.status, 200, next.text);
    assert.match(next.text, /after the restart/);
  } finally {
    await everything.close();
  }
});

test('a child that never comes back: after restart.attempts the session ends (404) and /readyz says not ready', async () => {
  const marker = join(mkdtempSync(join(tmpdir(), 'gatehouse-broken-')), 'broken');
  const broken = await startGateway({ upstreams: [{ name: 'fragile', command: [process.execPath, FAKE], env: { BROKEN_IF_EXISTS: marker }, era: 'legacy', restart: { attempts: 2, firstDelayMs: 20 } }] });
  try {
    const init = await post(broken.url, rpc(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) };
    writeFileSync(marker, 'x'); // from now on the program cannot start
    assert.equal((await post(broken.url, rpc(1, 'tools/call', { name: 'crash' }), headers)).status, 503);
    const during = await post(broken.url, rpc(2, 'tools/call', { name: 'echo' }), headers);
    assert.equal(during.status, 503, 'waited for the restarts, which failed');
    assert.match(during.json().error.message, /could not be restarted/);
    const after = await post(broken.url, rpc(3, 'tools/call', { name: 'echo' }), headers);
    assert.equal(after.status, 404);
    assert.equal(after.json().error.code, -32001);
    assert.ok(broken.logs.some((l) => l.msg === 'stdio upstream did not come back; the session ends'));
    assert.equal((await fetch(`${broken.origin}/readyz`)).status, 503);
  } finally {
    await broken.close();
  }
});
