// A `perSession` stdio child that crashes is replaced under the same session, with the client's initialize
// replayed (README §stdio; 2026-07-28/basic/transports/stdio.mdx §Unexpected Termination), up to
// `restart.attempts` tries with each delay doubling, then the session ends. Until 3 December: a
// replacement whose replayed initialize timed out was never stopped (one more process per try, running
// after the gateway closed); a replacement adopted while the gateway closed ran on; and a child that
// answered the replayed initialize and died soon after was restarted for ever at the first delay, since
// each answered initialize counted as recovery.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { waitUntil } from '../helpers/stdio-children.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/upstreams/flaky-stdio.mjs', import.meta.url));
const INIT = rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'restarts', version: '1' } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A gateway over the flaky child with `switchName` set to a marker file, created once the session is up. */
async function flaky(switchName: string, more: Record<string, unknown>) {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-restarts-'));
  const marker = join(dir, 'marker');
  const pids = join(dir, 'pids');
  writeFileSync(pids, '');
  const gw = await startGateway({ upstreams: [{ name: 'flaky', command: [process.execPath, FIXTURE], env: { [switchName]: marker, PIDS: pids }, era: 'legacy', processes: 'perSession', ...more }] });
  const init = await post(gw.url, INIT);
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) };
  writeFileSync(marker, '');
  // The child exits on this call; its replacements meet the marker.
  await post(gw.url, rpc(1, 'tools/call', { name: 'crash' }), headers);
  const spawned = (): number[] => readFileSync(pids, 'utf8').trim().split('\n').filter(Boolean).map(Number);
  const cleanup = (): void => {
    for (const p of spawned().filter(alive)) process.kill(p, 'SIGKILL');
  };
  return { gw, spawned, cleanup };
}

test('a replacement whose replayed initialize times out is stopped: none is left when the tries are over', async () => {
  const { gw, spawned, cleanup } = await flaky('HANG_INIT_IF_EXISTS', { timeouts: { requestMs: 400 }, restart: { attempts: 3, firstDelayMs: 50 } });
  try {
    assert.ok(await waitUntil(() => gw.logs.some((l) => l.msg === 'stdio upstream did not come back; the session ends'), 5_000), 'gave up');
    assert.equal(spawned().length, 4, 'the first child and three tries');
    // A try stopped is gone once the system has reaped it: waited for (bounded). One left running hangs in
    // its initialize, its stdin still open, for as long as the gateway runs.
    await waitUntil(() => spawned().filter(alive).length === 0, 5_000);
    assert.deepEqual(spawned().filter(alive), [], 'no try is left running');
  } finally {
    await gw.close();
    cleanup();
  }
});

test('a replacement still starting when the gateway closes is stopped', async () => {
  const { gw, spawned, cleanup } = await flaky('SLOW_INIT_IF_EXISTS', { restart: { attempts: 3, firstDelayMs: 50 } });
  try {
    // The replacement is spawned; its replayed initialize takes 1.5 s.
    assert.ok(await waitUntil(() => spawned().length === 2, 3_000));
    await gw.close();
    await sleep(2_000);
    assert.deepEqual(spawned().filter(alive), []);
  } finally {
    cleanup();
  }
});

test('a child that dies right after each replayed initialize backs off and ends the session after restart.attempts', async () => {
  const { gw, spawned, cleanup } = await flaky('CRASH_AFTER_INIT_IF_EXISTS', { restart: { attempts: 2, firstDelayMs: 50 } });
  try {
    assert.ok(await waitUntil(() => gw.logs.some((l) => l.msg === 'stdio upstream did not come back; the session ends'), 5_000), 'gave up');
    await sleep(500);
    // The first child, then at most two tries: before, 23 children in 4 s and counting.
    assert.ok(spawned().length <= 3, `${spawned().length} children`);
  } finally {
    await gw.close();
    cleanup();
  }
});

test('shared: a child that initializes and dies on every call is not counted as recovered, so the calls soon fail at once', async () => {
  // An answered initialize reset the crash count, so every call waited the first delay and started a child.
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-restarts-'));
  const pids = join(dir, 'pids');
  writeFileSync(pids, '');
  const gw = await startGateway({ upstreams: [{ name: 'flaky', command: [process.execPath, FIXTURE], env: { PIDS: pids }, era: 'legacy', restart: { attempts: 2, firstDelayMs: 200 } }] });
  const spawned = (): number[] => readFileSync(pids, 'utf8').trim().split('\n').filter(Boolean).map(Number);
  try {
    let headers = { ...LEGACY_HEADERS, 'mcp-session-id': String((await post(gw.url, INIT)).headers['mcp-session-id']) };
    for (let i = 1; i <= 6; i++) {
      let res = await post(gw.url, rpc(i, 'tools/call', { name: 'crash' }), headers);
      if (res.status === 404) {
        headers = { ...LEGACY_HEADERS, 'mcp-session-id': String((await post(gw.url, INIT)).headers['mcp-session-id']) };
        res = await post(gw.url, rpc(i, 'tools/call', { name: 'crash' }), headers);
      }
    }
    // Past restart.attempts crashes in a row, calls fail at once until the longest delay has passed.
    assert.ok(spawned().length < 6, `${spawned().length} children for 6 calls`);
  } finally {
    await gw.close();
    for (const p of spawned().filter(alive)) process.kill(p, 'SIGKILL');
  }
});
