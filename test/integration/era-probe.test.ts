// Era detection per upstream (GATEWAY-REQUIREMENTS §5; 2026-07-28/basic/transports/streamable-http.mdx
// §Backward Compatibility): a modern probe first, a legacy initialize when the 4xx body is not a modern
// error, the verdict cached, and probed again when it stops holding.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, legacySession, modernRequest, post, rpc } from '../helpers/http.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** An upstream that speaks one era at a time and can be switched, counting the gateway's probes. */
async function switchable() {
  const state = { era: 'legacy' as 'legacy' | 'modern' | 'dual', discovers: 0, probeInits: 0, clientInits: 0 };
  const up = await startFakeUpstream((req, res, body) => {
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    const msg = JSON.parse(body) as { id?: string | number; method?: string };
    const json = (status: number, payload: unknown, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(payload));
    };
    if (msg.method === 'server/discover') {
      state.discovers++;
      if (state.era === 'legacy') return json(400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: Server not initialized' } });
      return json(200, { jsonrpc: '2.0', id: msg.id, result: { supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, resultType: 'complete', ttlMs: 0, cacheScope: 'public' } });
    }
    if (msg.method === 'initialize') {
      if (msg.id === 'gatehouse-probe') state.probeInits++;
      else state.clientInits++;
      if (state.era === 'modern') return json(400, { jsonrpc: '2.0', id: msg.id, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'], requested: '2025-11-25' } } });
      return json(200, { jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'switch', version: '1' } } }, { 'mcp-session-id': `s-${Math.random()}` });
    }
    if (msg.id === undefined) return void res.writeHead(202).end();
    // A legacy server refuses a modern request's version (2026-07-28 basic/versioning.mdx: -32022, HTTP 400).
    const version = (msg as { params?: { _meta?: Record<string, unknown> } }).params?._meta?.['io.modelcontextprotocol/protocolVersion'];
    if (state.era === 'legacy' && version === '2026-07-28' && req.headers['mcp-session-id'] === undefined) {
      return json(400, { jsonrpc: '2.0', id: msg.id, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2025-11-25'], requested: '2026-07-28' } } });
    }
    return json(200, { jsonrpc: '2.0', id: msg.id, result: { tools: [], era: state.era, ...(state.era !== 'legacy' ? { resultType: 'complete', ttlMs: 0, cacheScope: 'public' } : {}) } });
  }, { handshake: false });
  cleanups.push(() => up.close());
  return { up, state };
}

test('a legacy upstream is detected once (discover refused without a modern error, then initialize) and the verdict is cached', async () => {
  const { up, state } = await switchable();
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }] });
  cleanups.push(() => gw.close());
  for (let i = 0; i < 5; i++) {
    const req = modernRequest(i, 'tools/list');
    const res = await post(gw.url, req.body, req.headers);
    assert.equal(res.json().result.era, 'legacy');
    assert.equal(res.json().result.resultType, 'complete', 'bridged: the legacy result was made modern');
  }
  assert.equal(state.discovers, 1);
  assert.equal(state.probeInits, 1);
  assert.ok(gw.logs.some((l) => l.msg === 'upstream era detected' && l.era === 'legacy' && l.version === '2025-11-25'));
});

test('a modern upstream is detected from its DiscoverResult and then passed through', async () => {
  const { up, state } = await switchable();
  state.era = 'modern';
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }] });
  cleanups.push(() => gw.close());
  const req = modernRequest(1, 'tools/list');
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(res.json().result.era, 'modern');
  // The legacy handshake is tried only to learn whether legacy clients can pass through; it was refused.
  assert.ok(gw.logs.some((l) => l.msg === 'upstream era detected' && l.era === 'modern' && l.alsoLegacy === false));
});

test('when the verdict stops holding (the upstream became modern), the next request probes again', async () => {
  const { up, state } = await switchable();
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }] });
  cleanups.push(() => gw.close());
  const first = modernRequest(1, 'tools/list');
  assert.equal((await post(gw.url, first.body, first.headers)).json().result.era, 'legacy');
  state.era = 'modern';
  // A capability set not seen before needs a new legacy session, which the now-modern upstream refuses.
  const other = modernRequest(2, 'tools/list', { _meta: { 'io.modelcontextprotocol/clientCapabilities': { roots: {} } } });
  const refused = await post(gw.url, other.body, other.headers);
  assert.equal(refused.status, 502);
  const after = await post(gw.url, other.body, other.headers);
  assert.equal(after.json().result.era, 'modern', 'probed again and now passed through');
  assert.equal(state.discovers, 2);
  assert.equal(gw.logs.filter((l) => l.msg === 'upstream era detected').length, 2);
});

test('when a modern upstream starts refusing its version (it became legacy), a bridged legacy client is refused once and the next session finds the new era', async () => {
  const { up, state } = await switchable();
  state.era = 'modern';
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }] });
  cleanups.push(() => gw.close());
  const list = (session: string, id: number) => post(gw.url, rpc(id, 'tools/list'), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
  const bridged = await legacySession(gw.url);
  assert.equal((await list(bridged, 1)).json().result.era, 'modern', 'a legacy client bridged to the modern upstream');
  state.era = 'legacy';
  const refused = await list(bridged, 2);
  assert.equal(refused.json().error?.code, -32022, refused.text);
  // Probed again at once, not when the verdict's 5 minutes are up: a new session is passed through.
  const fresh = await legacySession(gw.url);
  assert.equal((await list(fresh, 3)).json().result.era, 'legacy', 'probed again and now passed through');
  assert.equal(state.discovers, 2);
  assert.ok(gw.logs.some((l) => l.msg === 'upstream era detected' && l.era === 'legacy'));
});

test('when a legacy upstream starts refusing the handshake (it became modern), a legacy client\'s refused initialize makes the next request probe again, at most once a second', async () => {
  const { up, state } = await switchable();
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }] });
  cleanups.push(() => gw.close());
  const list = (session: string, id: number) => post(gw.url, rpc(id, 'tools/list'), { ...LEGACY_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
  assert.equal((await list(await legacySession(gw.url), 1)).json().result.era, 'legacy', 'passed through');
  state.era = 'modern';
  const init = rpc('i', 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'test', version: '0' } });
  // Refused handshakes less than a second after the probe do not probe again (a client's bad initialize is refused too).
  for (let i = 0; i < 3; i++) {
    const refused = await post(gw.url, init);
    assert.equal(refused.status, 400);
    assert.equal(refused.json().error?.code, -32022, "the upstream's refusal, passed on");
  }
  assert.equal(state.discovers, 1, 'a verdict less than a second old is kept');
  await new Promise((r) => setTimeout(r, 1_100));
  assert.equal((await post(gw.url, init)).status, 400);
  // Probed again: the upstream is now modern, so the legacy client is bridged and its session is Gatehouse's.
  const bridged = await legacySession(gw.url);
  assert.equal((await list(bridged, 2)).json().result.era, 'modern');
  assert.equal(state.discovers, 2);
});

test('a dual-era upstream (VER §Compatibility Matrix) serves both eras directly: no bridging for either', async () => {
  const { up, state } = await switchable();
  state.era = 'dual';
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }] });
  cleanups.push(() => gw.close());
  const modern = modernRequest(1, 'tools/list');
  assert.equal((await post(gw.url, modern.body, modern.headers)).json().result.era, 'dual');
  const init = await post(gw.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } } }));
  assert.equal(init.status, 200);
  assert.equal(state.clientInits, 1, "the legacy client's own initialize reached the upstream");
  assert.ok(gw.logs.some((l) => l.msg === 'upstream era detected' && l.era === 'modern' && l.alsoLegacy === true));
});
