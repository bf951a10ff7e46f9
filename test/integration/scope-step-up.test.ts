// Step-up for one tool (2025-11-25/basic/authorization.mdx §Runtime Insufficient Scope Errors, §Step-Up
// Authorization Flow; 2026-07-28 the same; GATEWAY-REQUIREMENTS §Auth): a policy rule with
// `onMissingScopes: challenge` keeps its tool listed for a caller whose token lacks the rule's scopes, and
// answers a call with 403 and a WWW-Authenticate challenge naming the scopes to ask for. A token with them
// then calls it. Without the option the tool stays hidden, answered as an unknown one. Tokens come from a
// real JWKS issuer (test/helpers/auth-server.ts); the upstream is the v2 SDK's modern server.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AuthServer } from '../helpers/auth-server.js';
import type { TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';
import { startScopeChallengeGateway, type ScopeChallengeGateway } from '../helpers/scope-challenge-gateway.js';
import type { ModernServer } from '../fixtures/upstreams/modern-server.js';

const PUBLIC_URL = 'https://mcp.example.test/mcp';
const METADATA_URL = 'https://mcp.example.test/.well-known/oauth-protected-resource/mcp';

let as: AuthServer;
let upstream: ModernServer;
let gw: TestGateway;
let setup: ScopeChallengeGateway | undefined;

before(async () => {
  setup = await startScopeChallengeGateway(PUBLIC_URL, ['mcp:tools', 'calc:write'], [
    { id: 'calculators', scopes: ['calc:write'], onMissingScopes: 'challenge', access: 'allow', tools: ['m/add'] },
    { id: 'echoers', access: 'allow', tools: ['m/echo'] },
  ]);
  ({ as, upstream, gw } = setup);
});

after(async () => {
  await setup?.close();
});

const tokenWith = (scope: string): Promise<string> => as.sign({ sub: 'alice', aud: PUBLIC_URL, scope });
const upstreamCallsOf = (name: string): number =>
  upstream.requests.filter((r) => (r.body as { method?: string; params?: { name?: string } } | undefined)?.method === 'tools/call' && (r.body as { params: { name: string } }).params.name === name).length;

async function modern(token: string, id: number, method: string, params: Record<string, unknown> = {}) {
  const m = modernRequest(id, method, params);
  const res = await post(gw.url, m.body, { ...m.headers, authorization: `Bearer ${token}` });
  return { ...res, json: JSON.parse(res.text) as { id: number; result?: any; error?: { code: number; message: string; data?: any } } };
}

describe('onMissingScopes: challenge', () => {
  test('the tool is listed; a call without the scope gets 403 insufficient_scope naming the scopes to ask for; with them it runs', async () => {
    const narrow = await tokenWith('mcp:tools');
    const list = await modern(narrow, 1, 'tools/list');
    assert.equal(list.status, 200);
    assert.deepEqual(list.json.result.tools.map((t: { name: string }) => t.name).sort(), ['add', 'echo'], 'add is listed (a client can step up for it); whoami-headers is hidden');

    const before = upstreamCallsOf('add');
    const refused = await modern(narrow, 2, 'tools/call', { name: 'add', arguments: { a: 1, b: 2 } });
    assert.equal(refused.status, 403);
    const challenge = refused.headers['www-authenticate'] as string;
    assert.match(challenge, /^Bearer /);
    assert.match(challenge, /error="insufficient_scope"/);
    assert.match(challenge, /scope="mcp:tools calc:write"/, 'the granted scope and the rule\'s: a step-up keeps what the client had');
    assert.ok(challenge.includes(`resource_metadata="${METADATA_URL}"`), challenge);
    assert.equal(refused.json.id, 2);
    assert.equal(refused.json.error?.data?.reason, 'insufficient_scope');
    assert.match(refused.json.error!.message, /Insufficient scope: Tool "?add"? needs mcp:tools calc:write/);
    assert.equal(upstreamCallsOf('add'), before, 'nothing reached the upstream');

    const stepped = await tokenWith('mcp:tools calc:write');
    const ran = await modern(stepped, 3, 'tools/call', { name: 'add', arguments: { a: 1, b: 2 } });
    assert.equal(ran.status, 200, ran.text);
    assert.deepEqual(ran.json.result.structuredContent, { sum: 3 });
    assert.equal(upstreamCallsOf('add'), before + 1);
  });

  test('offline_access, a refresh-token grant and not a resource requirement, is never asked for in the challenge', async () => {
    // 2026-07-28 authorization §Refresh Tokens: SHOULD NOT advertise offline_access in challenges.
    const res = await modern(await tokenWith('openid offline_access mcp:tools'), 5, 'tools/call', { name: 'add', arguments: { a: 1, b: 1 } });
    assert.equal(res.status, 403);
    const challenge = res.headers['www-authenticate'] as string;
    assert.match(challenge, /scope="openid mcp:tools calc:write"/);
    assert.doesNotMatch(challenge, /offline_access/);
  });

  test('a tool no rule lets the caller in to stays hidden, answered as an unknown tool', async () => {
    const res = await modern(await tokenWith('mcp:tools calc:write'), 4, 'tools/call', { name: 'whoami-headers', arguments: {} });
    assert.equal(res.status, 200);
    assert.equal(res.json.error?.code, -32602);
    assert.match(res.json.error!.message, /Unknown tool/i);
    assert.equal(res.headers['www-authenticate'], undefined);
  });

  test('a legacy client (bridged to the modern server) gets the same 403', async () => {
    const narrow = await tokenWith('mcp:tools');
    const headers = { ...LEGACY_HEADERS, authorization: `Bearer ${narrow}` };
    const init = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'legacy', version: '1' } }), headers);
    assert.equal(init.status, 200, init.text);
    const session = init.headers['mcp-session-id'] as string;
    const withSession = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), withSession);
    const res = await post(gw.url, rpc(2, 'tools/call', { name: 'add', arguments: { a: 2, b: 2 } }), withSession);
    assert.equal(res.status, 403, res.text);
    assert.match(res.headers['www-authenticate'] as string, /error="insufficient_scope".*scope="mcp:tools calc:write"/);
  });
});
