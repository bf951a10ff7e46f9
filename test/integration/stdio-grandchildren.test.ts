// A stdio server's own helper processes (a browser it drives, a language server, a shell pipeline) end with
// it: Gatehouse starts each child in a process group of its own and, once the child is gone, ends what is
// left of that group, when the session ends (2026-07-28/basic/transports/stdio.mdx §Shutdown: close stdin,
// then SIGTERM, then SIGKILL), when the child crashes, and when the gateway closes. Before, only the child
// itself was stopped, and a helper it left ran on, one more per session, for as long as the host did.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { isAlive, stdioChildPids, waitUntil } from '../helpers/stdio-children.js';
import { request } from 'undici';

const CHILD = fileURLToPath(new URL('../fixtures/upstreams/grandchild-stdio.mjs', import.meta.url));
const GONE_WITHIN_MS = 8_000;

const gateways: TestGateway[] = [];
after(async () => {
  await Promise.all(gateways.map((gw) => gw.close()));
  // Every process a test started is stopped here by PID: the children, and the helpers they started.
  const pids = gateways.flatMap((gw) => [...stdioChildPids(gw), ...helperPids(gw)]);
  const leaked = pids.filter(running);
  for (const pid of leaked) process.kill(pid, 'SIGKILL');
});

/** PIDs of the helpers the children reported starting (`helper <pid>` on stderr). */
function helperPids(gw: TestGateway): number[] {
  return gw.logs.flatMap((l) => (l.msg === 'stdio upstream stderr' && typeof l.line === 'string' ? [/^helper (\d+)$/.exec(l.line)?.[1]] : [])).filter((p): p is string => p !== undefined).map(Number);
}

/** Alive and not a zombie waiting to be reaped by whoever adopted it. */
function running(pid: number): boolean {
  if (!isAlive(pid)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function gateway(env: Record<string, string> = {}): Promise<TestGateway> {
  const gw = await startGateway({ upstreams: [{ name: 'helpers', command: [process.execPath, CHILD], env, era: 'legacy', processes: 'perSession', restart: { attempts: 1, firstDelayMs: 100 } }] });
  gateways.push(gw);
  return gw;
}

async function openSession(gw: TestGateway): Promise<{ session: string; helper: number }> {
  const before = new Set(helperPids(gw));
  const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
  assert.equal(init.status, 200, init.text);
  assert.ok(await waitUntil(() => helperPids(gw).some((p) => !before.has(p)), 5_000), 'the child reported its helper');
  const helper = helperPids(gw).find((p) => !before.has(p))!;
  assert.ok(running(helper), 'the helper runs while its server does');
  return { session: String(init.headers['mcp-session-id']), helper };
}

test('a session ended by its client (DELETE): its child and the helper the child started are gone', { timeout: 30_000 }, async () => {
  const gw = await gateway();
  const { session, helper } = await openSession(gw);
  const res = await request(gw.url, { method: 'DELETE', headers: { ...LEGACY_HEADERS, 'mcp-session-id': session } });
  await res.body.text();
  assert.equal(res.statusCode, 200);
  assert.ok(await waitUntil(() => !running(helper), GONE_WITHIN_MS), `helper ${helper} still running ${GONE_WITHIN_MS} ms after its session ended`);
});

test('a child that crashes: the helper it left is ended too', { timeout: 30_000 }, async () => {
  const gw = await gateway();
  const { session, helper } = await openSession(gw);
  const crashed = await post(gw.url, rpc(1, 'tools/call', { name: 'crash' }), { ...LEGACY_HEADERS, 'mcp-session-id': session });
  assert.equal(crashed.status, 503, crashed.text);
  assert.ok(await waitUntil(() => !running(helper), GONE_WITHIN_MS), `helper ${helper} still running ${GONE_WITHIN_MS} ms after its server crashed`);
});

test('the gateway closes: every session’s helper is gone', { timeout: 30_000 }, async () => {
  const gw = await gateway();
  const a = await openSession(gw);
  const b = await openSession(gw);
  await gw.close();
  assert.ok(await waitUntil(() => !running(a.helper) && !running(b.helper), GONE_WITHIN_MS), `helpers still running after the gateway closed: ${[a.helper, b.helper].filter(running).join(', ')}`);
});

test('a helper that ignores SIGTERM is killed once the grace (2 s) is over, and the operator is told', { timeout: 30_000 }, async () => {
  const gw = await gateway({ HELPER_IGNORES_TERM: '1' });
  const { session, helper } = await openSession(gw);
  // The helper must have its SIGTERM handler in place before the session ends, or SIGTERM would end it.
  const ignoring = `helper ${helper} ignores SIGTERM`;
  assert.ok(await waitUntil(() => gw.logs.some((l) => l.msg === 'stdio upstream stderr' && l.line === ignoring), 5_000), `the child never reported: ${ignoring}`);
  const res = await request(gw.url, { method: 'DELETE', headers: { ...LEGACY_HEADERS, 'mcp-session-id': session } });
  await res.body.text();
  await new Promise((r) => setTimeout(r, 1_000));
  assert.ok(running(helper), 'within the grace, the helper that ignored SIGTERM still runs');
  assert.ok(await waitUntil(() => !running(helper), GONE_WITHIN_MS), `helper ${helper} still running ${GONE_WITHIN_MS} ms after its session ended`);
  assert.ok(gw.logs.some((l) => l.msg === 'stdio upstream left processes that ignored SIGTERM; killed'));
});
