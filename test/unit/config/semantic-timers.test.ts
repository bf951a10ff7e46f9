// Millisecond settings past what a Node timer holds (2^31-1 ms, about 24.8 days) fire at once instead (a
// shutdown.graceMs of 9999999999 cut every call in flight at stop): the semantic checks refuse them by key.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateConfigObject } from '../../../src/config/load.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';

const config = (raw: Record<string, unknown>) => validateConfigObject({ upstreams: [{ name: 'up', url: 'http://127.0.0.1:3001/mcp' }], auth: { anonymous: true }, ...raw });
const MAX = 2 ** 31 - 1;

describe('millisecond settings a timer cannot hold', () => {
  it('are refused by key: shutdown.graceMs and delayMs, sessions, an upstream timeout and a per-tool one', () => {
    const problems = unsupportedFeatures(config({
      shutdown: { graceMs: 9_999_999_999, delayMs: MAX + 1 },
      sessions: { idleTimeoutMs: MAX + 1 },
      upstreams: [{ name: 'up', url: 'http://127.0.0.1:3001/mcp', timeouts: { callMs: 10_000_000_000, tools: { build: 3_000_000_000 } } }, { name: 'local', command: ['node', 'server.js'], timeouts: { requestMs: MAX + 1 } }],
    }));
    for (const key of ['shutdown.graceMs', 'shutdown.delayMs', 'sessions.idleTimeoutMs', 'upstreams[0].timeouts.callMs', 'upstreams[0].timeouts.tools.build', 'upstreams[1].timeouts.requestMs']) {
      assert.ok(problems.some((p) => p.startsWith(`${key}: `) && p.includes(String(MAX))), `${key} in:\n${problems.join('\n')}`);
    }
  });

  it('the longest a timer holds is accepted, and a TTL that is no timer is not judged', () => {
    // requestStateTtlMs only dates sealed states; no timer waits for it.
    assert.deepEqual(unsupportedFeatures(config({ sessions: { requestStateTtlMs: 4_000_000_000 }, shutdown: { graceMs: MAX, delayMs: MAX }, upstreams: [{ name: 'up', url: 'http://127.0.0.1:3001/mcp', timeouts: { callMs: MAX, tools: { build: MAX } } }] })), []);
  });
});
