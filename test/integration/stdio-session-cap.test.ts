// `maxSessions` of a `processes: perSession` stdio upstream bounds its children (docs/configuration.md:
// "Most client sessions (each one a child process) this stdio upstream serves at once"). It must hold for
// initializes that arrive together, not only one after another: each starts a child and waits for its
// `initialize` answer (2025-11-25/basic/lifecycle.mdx §Initialization) before the session exists, and those
// waiting starts count against the cap too, or a burst of initializes starts a child each.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren, liveStdioChildren, stdioChildPids, waitUntil } from '../helpers/stdio-children.js';

const FAKE = fileURLToPath(new URL('../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const MAX_SESSIONS = 2;
const BURST = 6;

const gateways = gatewaysCheckedForLeakedChildren();

const initialize = (i: number): string => rpc(`init-${i}`, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: `burst-${i}`, version: '1' } });

test(`perSession, maxSessions ${MAX_SESSIONS}: ${BURST} initializes at once start at most ${MAX_SESSIONS} children; the rest are refused 503 with Retry-After`, { timeout: 60_000 }, async () => {
  // Each child answers its initialize 500 ms late, so the burst's starts overlap.
  const gw = await startGateway({ upstreams: [{ name: 'fake', command: [process.execPath, FAKE], env: { INITIALIZE_DELAY_MS: '500' }, era: 'legacy', processes: 'perSession', maxSessions: MAX_SESSIONS }] });
  gateways.push(gw);
  let most = 0;
  const watch = setInterval(() => (most = Math.max(most, liveStdioChildren(gw).length)), 20);
  let answers;
  try {
    answers = await Promise.all(Array.from({ length: BURST }, (_, i) => post(gw.url, initialize(i), LEGACY_HEADERS)));
  } finally {
    clearInterval(watch);
  }
  most = Math.max(most, liveStdioChildren(gw).length);
  assert.ok(stdioChildPids(gw).length <= MAX_SESSIONS, `children started for the burst: ${stdioChildPids(gw).length}, maxSessions ${MAX_SESSIONS}`);
  assert.ok(most <= MAX_SESSIONS, `children running at once: ${most}, maxSessions ${MAX_SESSIONS}`);
  const served = answers.filter((a) => a.status === 200);
  assert.equal(served.length, MAX_SESSIONS, answers.map((a) => `${a.status} ${a.text}`).join('\n'));
  for (const a of answers.filter((x) => x.status !== 200)) {
    assert.equal(a.status, 503, a.text);
    assert.ok(a.headers['retry-after'], 'told when to try again');
    assert.match(a.json().error.message, /maxSessions/);
  }
  // Every session served is usable.
  for (const a of served) {
    const res = await post(gw.url, rpc(1, 'tools/call', { name: 'echo' }), { ...LEGACY_HEADERS, 'mcp-session-id': String(a.headers['mcp-session-id']) });
    assert.equal(res.status, 200, res.text);
    assert.match(res.json().result.content[0].text, /^pid \d+$/);
  }
  // Once the starts are over, a new initialize ends the least recently used session as before, and is served.
  const later = await post(gw.url, initialize(BURST), LEGACY_HEADERS);
  assert.equal(later.status, 200, later.text);
  assert.ok(await waitUntil(() => liveStdioChildren(gw).length <= MAX_SESSIONS, 10_000), `children running: ${liveStdioChildren(gw).length}`);
});
