// Several upstreams behind one gateway, one of them down. The catalog's lists already show the others; its
// `initialize` (legacy clients, through the legacy bridge) and `server/discover` answers must too: they are
// built from the members that answer, their capabilities merged (issue: initialize and server/discover
// advertise the union), the missing member named in a warning, and tried again later. Until 3 December one
// member that refused connections made every legacy client's initialize and every server/discover fail.
// Spec: 2026-07-28/server/discover.mdx §Response; 2025-11-25/basic/lifecycle.mdx §Initialization;
// 2026-07-28/server/utilities/caching.mdx §Time-to-Live (an answer missing a member is not to be kept).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { freePort } from '../fixtures/upstreams/everything-http.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';

const EVERYTHING = { name: 'everything', command: [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] };

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function gateway(upstreams: unknown[]): Promise<TestGateway> {
  const gw = await startGateway({ upstreams });
  cleanups.push(() => gw.close());
  return gw;
}

function initialize(gw: TestGateway) {
  return post(gw.url, rpc('init', 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'test', version: '0' } }), LEGACY_HEADERS);
}

async function discover(gw: TestGateway) {
  const req = modernRequest('d', 'server/discover');
  return post(gw.url, req.body, req.headers);
}

/** A 2026-07-28 server (modern only) with its own instructions and one tool: how the late member is seen. */
function lateMember(req: IncomingMessage, res: ServerResponse, body: string): void {
  if (req.method === 'DELETE') return void res.writeHead(200).end();
  const msg = JSON.parse(body) as { id: unknown; method: string };
  res.setHeader('content-type', 'application/json');
  if (msg.method === 'initialize') {
    // Not dual-era: the legacy handshake is refused, as 2026-07-28-only servers do.
    res.writeHead(400).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'], requested: '2025-11-25' } } }));
    return;
  }
  const results: Record<string, Record<string, unknown>> = {
    'server/discover': { supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, instructions: 'the late member', ttlMs: 0, cacheScope: 'public' },
    'tools/list': { tools: [{ name: 'late_tool', inputSchema: { type: 'object' } }], ttlMs: 0, cacheScope: 'public' },
  };
  const result = results[msg.method] ?? {};
  res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', ...result } }));
}

test('one member that refuses connections: initialize and server/discover answer from the others, and the member is tried again later', async () => {
  // A port where nothing listens (yet): the late member comes up there during the test.
  const late: FakeUpstream = await startFakeUpstream(lateMember, { handshake: false });
  const { port } = late.server.address() as AddressInfo;
  await late.close();
  cleanups.push(() => late.close());
  const gw = await gateway([EVERYTHING, { name: 'late', url: late.url }]);

  const init = await initialize(gw);
  assert.equal(init.status, 200, init.text);
  const caps = init.json().result.capabilities;
  assert.ok(caps.tools && caps.prompts && caps.resources, `the reachable member's capabilities are advertised: ${init.text}`);
  const session = init.headers['mcp-session-id'];
  assert.equal(typeof session, 'string', 'a session was issued');
  const list = await post(gw.url, rpc(2, 'tools/list'), { ...LEGACY_HEADERS, 'mcp-session-id': session as string, 'mcp-protocol-version': '2025-11-25' });
  assert.equal(list.status, 200, list.text);
  assert.ok((list.json().result.tools as Array<{ name: string }>).some((t) => t.name === 'everything_echo'), 'the session serves the reachable member');

  const found = await discover(gw);
  assert.equal(found.status, 200, found.text);
  const result = found.json().result;
  assert.ok(result.capabilities.tools && result.capabilities.prompts, found.text);
  assert.equal(result.ttlMs, 0, 'an answer missing a member is stale at once (caching.mdx §Time-to-Live), not kept for a minute');
  assert.ok(gw.logs.some((l) => l.level === 'warn' && l.upstream === 'late'), 'the missing member is named in a warning');

  // The member comes up: later answers include it, with no restart.
  await new Promise<void>((r) => late.server.listen(port, '127.0.0.1', r));
  let legacyInstructions = '';
  let modernInstructions = '';
  for (let i = 0; i < 50 && !(legacyInstructions.includes('late: the late member') && modernInstructions.includes('late: the late member')); i++) {
    await new Promise((r) => setTimeout(r, 200));
    legacyInstructions = String((await initialize(gw)).json().result?.instructions ?? '');
    modernInstructions = String((await discover(gw)).json().result?.instructions ?? '');
  }
  assert.match(legacyInstructions, /late: the late member/, 'a legacy initialize now includes the member that came back');
  assert.match(modernInstructions, /late: the late member/, 'server/discover now includes the member that came back');
  const whole = (await discover(gw)).json().result;
  assert.equal(whole.ttlMs, 60_000, 'with every member answering, the answer is kept as before');
});

test('every member down: initialize and server/discover still fail, as before', async () => {
  const gw = await gateway([
    { name: 'one', url: `http://127.0.0.1:${await freePort()}/mcp` },
    { name: 'two', url: `http://127.0.0.1:${await freePort()}/mcp` },
  ]);
  const init = await initialize(gw);
  assert.notEqual(init.status, 200, init.text);
  assert.equal(init.headers['mcp-session-id'], undefined, 'no session for a catalog with nothing in it');
  const found = await discover(gw);
  assert.ok(found.status !== 200 || found.json().error !== undefined, found.text);
  assert.equal(found.json().result, undefined, found.text);
});
