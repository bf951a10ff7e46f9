// A stdio child that stops reading its stdin (stuck in a loop, blocked on something) while clients go on
// sending: what Gatehouse writes to it waits in Gatehouse's memory. That backlog is bounded by the
// upstream's `maxMessageBytes`: past it, a request is refused at once with 503 GW_ERR_UPSTREAM_OVERLOADED
// (retryable) instead of being queued behind megabytes the child may never read, each call holding its
// client until `timeouts.requestMs` (2026-07-28/basic/transports/stdio.mdx: one stdin, written by the client).
// Once the child reads again, what was queued is answered and new calls are served.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren, waitUntil } from '../helpers/stdio-children.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const BOUND = 1024 * 1024;
const PAD = 'p'.repeat(200 * 1024);
const CALLS = 16;
/** How long the child reads nothing. */
const DEAF_MS = 4_000;
/** Far longer than the test waits for a refusal: a call that is queued, not refused, is still waiting. */
const REQUEST_MS = 60_000;

const gateways = gatewaysCheckedForLeakedChildren();

interface Answer {
  status: number;
  text: string;
}

const codeOf = (a: Answer): string | undefined => (JSON.parse(a.text) as { error?: { data?: { code?: string } } }).error?.data?.code;

test(`a child that reads no more stdin: past maxMessageBytes (${BOUND}) of backlog, calls are refused at once with 503 GW_ERR_UPSTREAM_OVERLOADED; served again once it reads`, { timeout: 60_000 }, async () => {
  const gw = await startGateway({ upstreams: [{ name: 'fake', command: [process.execPath, FAKE], era: 'legacy', processes: 'perSession', maxMessageBytes: BOUND, timeouts: { requestMs: REQUEST_MS } }] });
  gateways.push(gw);
  const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
  assert.equal(init.status, 200, init.text);
  const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) };
  const deaf = post(gw.url, rpc('deaf', 'tools/call', { name: 'deaf', arguments: { ms: DEAF_MS } }), headers);
  // The child reads no more once it says so on stderr.
  assert.ok(await waitUntil(() => gw.logs.some((l) => l.msg === 'stdio upstream stderr' && l.line === 'deaf'), 5_000), 'the child never went deaf');
  // 16 calls of 200 KiB: 3.2 MiB, more than the bound and the pipe's own buffers together.
  const calls: Array<Promise<Answer>> = [];
  for (let i = 0; i < CALLS; i++) calls.push(post(gw.url, rpc(`big-${i}`, 'tools/call', { name: 'echo', arguments: { pad: PAD } }), headers));
  const early: Answer[] = [];
  for (const c of calls) void c.then((x) => early.push(x), () => {});
  await waitUntil(() => early.length > 0, DEAF_MS - 1_000);
  assert.ok(early.length > 0, `no call answered while the child read nothing: every one of ${CALLS} calls was queued for it`);
  for (const a of early) {
    assert.equal(a.status, 503, a.text);
    assert.equal(codeOf(a), 'GW_ERR_UPSTREAM_OVERLOADED', a.text);
  }
  assert.ok(gw.logs.some((l) => l.msg === 'stdio upstream is not reading its input; nothing more is written to it until it does' && l.first === 'request refused'), 'the operator is told');
  // The child hears again: the calls that were written are answered, and new ones are served.
  const all = await Promise.all(calls);
  assert.equal((await deaf).status, 200);
  const served = all.filter((a) => a.status === 200);
  assert.ok(served.length > 0, 'the calls written before the bound was reached are answered');
  for (const a of all) if (a.status !== 200) assert.equal(codeOf(a), 'GW_ERR_UPSTREAM_OVERLOADED', a.text);
  const next = await post(gw.url, rpc('next', 'tools/call', { name: 'echo', arguments: { pad: PAD } }), headers);
  assert.equal(next.status, 200, next.text);
  assert.match(JSON.parse(next.text).result.content[0].text, /^pid \d+$/);
});
