// A ping a stdio (or HTTP+SSE) server sends before it answers `initialize` is answered in `processes:
// perSession` too. Lifecycle allows it (2025-11-25/basic/lifecycle.mdx §Initialization: "The server SHOULD
// NOT send requests other than pings and logging before receiving the initialized notification"), and the
// receiver MUST respond promptly (basic/utilities/ping.mdx §Behavior Requirements). A client session's new
// child (and a crashed one's replacement, whose initialize is replayed) was not yet any session's while it
// answered, so what it sent went nowhere: a server that waits for the pong timed its initialize out, and a
// crashed session never came back.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

const gw = await startGateway({
  upstreams: [{ name: 'pinger', command: [process.execPath, 'test/fixtures/upstreams/ping-first-stdio.mjs'], processes: 'perSession', timeouts: { requestMs: 3_000 }, restart: { attempts: 2, firstDelayMs: 50 } }],
});
after(() => gw.close());

async function open(clientInfo: { name: string; version: string }): Promise<string> {
  const init = await post(gw.url, rpc('init', 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo }), LEGACY_HEADERS);
  const id = init.headers['mcp-session-id'];
  assert.equal(typeof id, 'string', `initialize issued no session: HTTP ${init.status} ${init.text}`);
  await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), { ...LEGACY_HEADERS, 'mcp-session-id': id as string, 'mcp-protocol-version': '2025-11-25' });
  return id as string;
}

async function call(session: string, id: number, name: string): Promise<string> {
  const res = await post(gw.url, rpc(id, 'tools/call', { name, arguments: {} }), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
  return res.text;
}

// The first session's initialize waits for the era probe, which asks it of a child with that client's own
// params and hands it over (whose pings the probe's reader answered, stdio-messages.ts): it has a session
// whatever happens to new children.
let first: string;

test('a session\'s own child that pings before answering initialize is initialized', async () => {
  first = await open({ name: 'first', version: '0' });
  assert.ok(gw.logs.some((l) => l.msg === 'stdio upstream child reused for a new session'), 'the probe\'s child');
  // Another client's params: a child of its own.
  const second = await open({ name: 'second', version: '0' });
  assert.match(await call(second, 1, 'pid'), /pid \d+/);
});

test('a crashed session\'s replacement that pings before answering the replayed initialize comes back', async () => {
  const before = (await call(first, 2, 'pid')).match(/pid (\d+)/)?.[1];
  assert.ok(before !== undefined);
  await call(first, 3, 'crash'); // fails: the child is gone; a replacement replays the initialize
  const after = (await call(first, 4, 'pid')).match(/pid (\d+)/)?.[1];
  assert.ok(after !== undefined && after !== before, 'the session came back on a new child');
});
