// A wrong `era` pin names itself (issue 15 item 1): pinned `modern` in front of a session-based server, or
// `legacy` in front of a modern-only one, the 502 says which pin is wrong and what the server answered,
// instead of a bare "did not answer". Real servers: the v1 SDK (legacy) and v2 SDK (modern, legacy
// refused) fixtures.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startCountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';

test('era: modern on a legacy server: a legacy client\'s 502 names the pin and the fix', async () => {
  const up = await startCountingUpstream('legacy');
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }] });
  try {
    const r = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }), LEGACY_HEADERS);
    assert.equal(r.status, 502);
    assert.match(r.json().error.message, /pinned to era: modern, but it answered like a legacy \(session-based\) server.*Set era: auto \(or legacy\)/);
  } finally {
    await gw.close();
    await up.close();
  }
});

test('era: legacy on a modern-only server: a modern client\'s 502 names the pin and the fix', async () => {
  const up = await startCountingUpstream('modern');
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }] });
  try {
    const m = modernRequest(1, 'tools/call', { name: 'lookup', arguments: { item: 'x' } });
    const r = await post(gw.url, m.body, m.headers);
    assert.equal(r.status, 502);
    assert.match(r.json().error.message, /pinned to era: legacy, but it answered like a modern \(2026-07-28\) server.*Set era: auto \(or modern\)/);
  } finally {
    await gw.close();
    await up.close();
  }
});
