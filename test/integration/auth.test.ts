// Authentication at the edge: API keys and OAuth 2.1 JWT access tokens, RFC 9728 discovery, and the
// attack matrix of issue 5. Spec: 2026-07-28/basic/authorization/index.mdx §Token Handling, §Error
// Handling, §Runtime Insufficient Scope Errors; authorization-server-discovery.mdx §Protected Resource
// Metadata Discovery Requirements; security best practices §Token Passthrough. Keys and tokens come from a
// real authorization server served in the test (test/helpers/auth-server.ts); the upstream records every
// request, so "nothing reached it" and "no client credential reached it" are checked, not assumed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { exportSPKI } from 'jose';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { startAuthServer, type AuthServer } from '../helpers/auth-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/stdio-children.js';
import { LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';

const PUBLIC_URL = 'https://mcp.example.test/mcp';
const METADATA_URL = 'https://mcp.example.test/.well-known/oauth-protected-resource/mcp';
const UPSTREAM_SECRET = 'Bearer upstream-own-credential';
const KEYS = {
  ops: 'gh_ops_key_0123456789abcdefghijklmnopqrstuv',
  reader: 'gh_reader_key_0123456789abcdefghijklmnopqrs',
  expired: 'gh_expired_key_0123456789abcdefghijklmnopq',
  disabled: 'gh_disabled_key_0123456789abcdefghijklmnop',
  noscope: 'gh_noscope_key_0123456789abcdefghijklmnopq',
};
const TOOLS = ['get_user', 'delete_user', 'search'].map((name) => ({ name, description: `the ${name} tool`, inputSchema: { type: 'object' } }));

let as: AuthServer;
let upstream: FakeUpstream;
let gw: TestGateway;
/** Every credential a client sent in this file; none may ever appear upstream. */
const clientCredentials = new Set<string>(Object.values(KEYS));

before(async () => {
  as = await startAuthServer();
  let sessions = 0;
  upstream = await startFakeUpstream((req, res, body) => {
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string } };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const result =
      msg.method === 'initialize'
        ? { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'recorder', version: '1' } }
        : msg.method === 'tools/list'
          ? { tools: TOOLS }
          : msg.method === 'tools/call'
            ? { content: [{ type: 'text', text: `called ${msg.params?.name}` }] }
            : {};
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (msg.method === 'initialize') headers['mcp-session-id'] = `up-${++sessions}`;
    res.writeHead(200, headers).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  });
  gw = await startGateway({
    listen: { publicUrl: PUBLIC_URL },
    upstreams: [{ name: 'crm', url: upstream.url, headers: { Authorization: UPSTREAM_SECRET } }],
    auth: {
      requiredScopes: ['mcp:tools'],
      // These tests send many bad credentials from one address on purpose; the failure limit has its own test.
      failureLimit: { attempts: 0 },
      apiKeys: [
        { id: 'ops', hash: hashKey(KEYS.ops), tenant: 'acme', scopes: ['mcp:tools'] },
        { id: 'reader', hash: hashKey(KEYS.reader), tenant: 'acme', scopes: ['mcp:tools'], tools: ['crm/get_*', 'crm/search'] },
        { id: 'old', hash: hashKey(KEYS.expired), scopes: ['mcp:tools'], expires: '2020-01-01' },
        { id: 'off', hash: hashKey(KEYS.disabled), scopes: ['mcp:tools'], disabled: true },
        { id: 'bare', hash: hashKey(KEYS.noscope), scopes: [] },
      ],
      oauth: {
        issuer: as.issuer,
        jwksUri: as.jwksUri,
        audience: PUBLIC_URL,
        scopesSupported: ['mcp:tools'],
        groupsClaim: 'groups',
        tenantClaim: 'tenant',
        jwksMinRefreshSeconds: 60,
      },
    },
    policy: {
      rules: [
        { id: 'support-no-deletes', groups: ['support'], access: 'deny', tools: ['crm/delete_*'] },
        { id: 'everyone', access: 'allow', tools: ['*'] },
      ],
    },
  });
});

after(async () => {
  await gw?.close();
  await upstream?.close();
  await as?.close();
});

const initialize = (id = 1): string => rpc(id, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'auth-test', version: '1' } });
const bearer = (token: string): Record<string, string> => {
  clientCredentials.add(token);
  return { ...LEGACY_HEADERS, authorization: `Bearer ${token}` };
};
const nowSec = (): number => Math.floor(Date.now() / 1000);
const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');

function challengeOf(res: { headers: Record<string, string | string[] | undefined> }): string {
  const v = res.headers['www-authenticate'];
  assert.equal(typeof v, 'string', 'a WWW-Authenticate header');
  return v as string;
}

describe('attack matrix: every bad credential is refused at the edge and nothing reaches the upstream', () => {
  interface Case {
    name: string;
    send: () => Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }>;
    status: number;
    /** `error="..."` in the challenge; null when the challenge must carry no error (no credential sent). */
    error?: string | null;
  }
  const token = (claims: Record<string, unknown>, opts?: { alg?: string; kid?: string }) => as.sign({ sub: 'alice', aud: PUBLIC_URL, scope: 'mcp:tools', ...claims }, opts);
  const cases: Case[] = [
    { name: 'no credential at all', send: () => post(gw.url, initialize()), status: 401, error: null },
    { name: 'malformed Authorization header', send: () => post(gw.url, initialize(), { ...LEGACY_HEADERS, authorization: 'Bearer' }), status: 400, error: 'invalid_request' },
    { name: 'two tokens in one header', send: () => post(gw.url, initialize(), { ...LEGACY_HEADERS, authorization: 'Bearer a b' }), status: 400, error: 'invalid_request' },
    { name: 'another scheme (Basic)', send: () => post(gw.url, initialize(), { ...LEGACY_HEADERS, authorization: 'Basic dXNlcjpwYXNz' }), status: 401, error: null },
    { name: 'unknown API key', send: () => post(gw.url, initialize(), bearer('gh_not_a_key_we_know_0123456789abcdef')), status: 401, error: 'invalid_token' },
    { name: 'expired API key', send: () => post(gw.url, initialize(), bearer(KEYS.expired)), status: 401, error: 'invalid_token' },
    { name: 'disabled API key', send: () => post(gw.url, initialize(), bearer(KEYS.disabled)), status: 401, error: 'invalid_token' },
    { name: 'key in the query string', send: () => post(`${gw.url}?access_token=${KEYS.ops}`, initialize(), LEGACY_HEADERS), status: 400, error: 'invalid_request' },
    { name: 'key in the query string next to a valid header', send: () => post(`${gw.url}?api_key=${KEYS.ops}`, initialize(), bearer(KEYS.ops)), status: 400, error: 'invalid_request' },
    { name: 'key in the body', send: () => post(gw.url, JSON.stringify({ ...JSON.parse(initialize()), access_token: KEYS.ops }), LEGACY_HEADERS), status: 400, error: 'invalid_request' },
    { name: 'key in params', send: () => post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' }, api_key: KEYS.ops }), LEGACY_HEADERS), status: 400, error: 'invalid_request' },
    {
      name: 'token in _meta (with a valid header too)',
      send: () => post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' }, _meta: { authorization: `Bearer ${KEYS.ops}` } }), bearer(KEYS.ops)),
      status: 400,
      error: 'invalid_request',
    },
    {
      name: 'alg: none',
      send: async () => post(gw.url, initialize(), bearer(`${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'mallory', iss: as.issuer, aud: PUBLIC_URL, scope: 'mcp:tools', exp: nowSec() + 300 })}.`)),
      status: 401,
      error: 'invalid_token',
    },
    {
      name: 'HS256 signed with the public key',
      send: async () => {
        // The classic confusion attack: the verifier's public key (PEM, as it might be configured) used as
        // an HMAC secret.
        const pem = await exportSPKI(as.published[0]!.publicKey);
        const header = b64({ alg: 'HS256', typ: 'JWT', kid: 'key-1' });
        const payload = b64({ sub: 'mallory', iss: as.issuer, aud: PUBLIC_URL, scope: 'mcp:tools', exp: nowSec() + 300 });
        const sig = createHmac('sha256', pem).update(`${header}.${payload}`).digest('base64url');
        return post(gw.url, initialize(), bearer(`${header}.${payload}.${sig}`));
      },
      status: 401,
      error: 'invalid_token',
    },
    { name: 'wrong issuer', send: async () => post(gw.url, initialize(), bearer(await token({ iss: 'https://evil.example' }))), status: 401, error: 'invalid_token' },
    { name: 'wrong audience (a token for another resource)', send: async () => post(gw.url, initialize(), bearer(await token({ aud: 'https://other.example/mcp' }))), status: 401, error: 'invalid_token' },
    { name: 'expired token', send: async () => post(gw.url, initialize(), bearer(await token({ exp: nowSec() - 3600 }))), status: 401, error: 'invalid_token' },
    { name: 'nbf in the future', send: async () => post(gw.url, initialize(), bearer(await token({ nbf: nowSec() + 3600 }))), status: 401, error: 'invalid_token' },
    { name: 'unknown kid', send: async () => post(gw.url, initialize(), bearer(await token({}, { kid: 'never-published' }))), status: 401, error: 'invalid_token' },
    {
      name: 'tampered payload',
      send: async () => {
        const [h, , s] = (await token({})).split('.');
        return post(gw.url, initialize(), bearer(`${h}.${b64({ sub: 'admin', iss: as.issuer, aud: PUBLIC_URL, scope: 'mcp:tools admin', exp: nowSec() + 300 })}.${s}`));
      },
      status: 401,
      error: 'invalid_token',
    },
    { name: 'valid token lacking the scope', send: async () => post(gw.url, initialize(), bearer(await token({ scope: 'profile' }))), status: 403, error: 'insufficient_scope' },
    { name: 'valid API key lacking the scope', send: () => post(gw.url, initialize(), bearer(KEYS.noscope)), status: 403, error: 'insufficient_scope' },
    {
      name: 'GET stream without credentials',
      send: async () => {
        const res = await request(gw.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': 'up-1', 'mcp-protocol-version': '2025-11-25' } });
        return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
      },
      status: 401,
      error: null,
    },
  ];

  for (const c of cases) {
    test(`${c.name} → ${c.status}`, async () => {
      const before = upstream.requests.length;
      const res = await c.send();
      assert.equal(res.status, c.status, res.text);
      const challenge = challengeOf(res);
      assert.match(challenge, /^Bearer /);
      assert.ok(challenge.includes(`resource_metadata="${METADATA_URL}"`), challenge);
      if (c.error === null) assert.doesNotMatch(challenge, /error=/);
      else assert.ok(challenge.includes(`error="${c.error}"`), challenge);
      if (c.status === 403) assert.ok(challenge.includes('scope="mcp:tools"'), challenge);
      const body = JSON.parse(res.text) as { error: { code: number; message: string } };
      assert.equal(typeof body.error.message, 'string');
      if (c.name.includes('query') || c.name.includes('body') || c.name.includes('params') || c.name.includes('_meta')) assert.match(body.error.message, /Authorization header/);
      assert.equal(upstream.requests.length, before, 'nothing reached the upstream');
    });
  }

  test('a flood of unknown kids fetches the key set at most once', async () => {
    const fetchesBefore = as.hits.get('/jwks') ?? 0;
    const results = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => (await post(gw.url, initialize(), bearer(await token({}, { kid: `forged-${i}` })))).status),
    );
    assert.deepEqual(new Set(results), new Set([401]));
    assert.ok((as.hits.get('/jwks') ?? 0) - fetchesBefore <= 1, `JWKS fetched ${(as.hits.get('/jwks') ?? 0) - fetchesBefore} times`);
  });
});

describe('the id of a refused request', () => {
  // An error response MUST carry the request's id unless it could not be read (2026-07-28/basic/index.mdx
  // §Error Responses; JSON-RPC 2.0 §5). A POST without credentials has its body read (so that it can say
  // where a misplaced credential belongs): its 401 and 400 once said id null all the same.
  test('a refusal made once the body is read echoes its id; one made before it says null', async () => {
    const missing = await post(gw.url, initialize(7));
    assert.equal(missing.status, 401, missing.text);
    assert.equal(missing.json().id, 7);
    const misplaced = await post(gw.url, rpc('eight', 'tools/list', { api_key: KEYS.ops }), LEGACY_HEADERS);
    assert.equal(misplaced.status, 400, misplaced.text);
    assert.equal(misplaced.json().id, 'eight');
    // A notification has no id to echo; a body that is not JSON has none to read.
    const notification = await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    assert.equal(notification.status, 401);
    assert.equal(notification.json().id, null);
    assert.equal((await post(gw.url, '{"jsonrpc":"2.0","id":9,')).json().id, null);
    // A credential refused before the body is read: the body is never read, so its id is not known.
    const refused = await post(gw.url, initialize(10), bearer('gh_not_a_key_we_know_0123456789abcdef'));
    assert.equal(refused.status, 401);
    assert.equal(refused.json().id, null);
  });
});

describe('accepted credentials', () => {
  test('an API key and a JWT both get through; the upstream sees only its own credential', async () => {
    const jwt = await as.sign({ sub: 'alice', aud: PUBLIC_URL, scope: 'mcp:tools', tenant: 'acme', groups: ['ops'] });
    for (const credential of [KEYS.ops, jwt]) {
      const init = await post(gw.url, initialize(), bearer(credential));
      assert.equal(init.status, 200, init.text);
      const session = init.headers['mcp-session-id'] as string;
      const list = await post(gw.url, rpc(2, 'tools/list'), { ...bearer(credential), 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
      assert.equal(list.status, 200, list.text);
      const modern = modernRequest(3, 'tools/call', { name: 'search', arguments: {} });
      const call = await post(gw.url, modern.body, { ...modern.headers, authorization: `Bearer ${credential}` });
      assert.equal(call.json().result.content[0].text, 'called search');
    }
    assert.ok(upstream.requests.length > 0);
    for (const r of upstream.requests) {
      assert.equal(r.headers.authorization, UPSTREAM_SECRET, 'the upstream always gets its own credential');
      assert.equal(r.headers.cookie, undefined);
      for (const c of clientCredentials) {
        assert.ok(!JSON.stringify(r.headers).includes(c), 'no client credential in upstream headers');
        assert.ok(!r.body.includes(c), 'no client credential in upstream bodies');
      }
    }
  });

  test('no log line carries a credential', () => {
    const text = gw.logs.map((l) => JSON.stringify(l)).join('\n');
    for (const c of clientCredentials) assert.ok(!text.includes(c), 'a client credential was logged');
    assert.ok(!text.includes('upstream-own-credential'), 'the upstream credential was logged');
  });
});

describe('RFC 9728 protected-resource metadata', () => {
  for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
    test(`served without credentials at ${path}`, async () => {
      const res = await request(`${gw.origin}${path}`);
      assert.equal(res.statusCode, 200);
      const doc = (await res.body.json()) as Record<string, unknown>;
      assert.equal(doc.resource, PUBLIC_URL);
      assert.deepEqual(doc.authorization_servers, [as.issuer]);
      assert.deepEqual(doc.scopes_supported, ['mcp:tools']);
      assert.deepEqual(doc.bearer_methods_supported, ['header']);
    });
  }
});

describe('visibility: callers see and call only what they may use', () => {
  async function modernTools(credential: string): Promise<{ names: string[]; cacheScope: unknown }> {
    const req = modernRequest(10, 'tools/list');
    const res = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${credential}` });
    const result = res.json().result;
    return { names: (result.tools as Array<{ name: string }>).map((t) => t.name), cacheScope: result.cacheScope };
  }
  async function call(credential: string, name: string) {
    const req = modernRequest(11, 'tools/call', { name, arguments: {} });
    return (await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${credential}` })).json();
  }

  test('a key with a tools allow-list sees only those tools, and the list is private', async () => {
    const { names, cacheScope } = await modernTools(KEYS.reader);
    assert.deepEqual(names, ['get_user', 'search']);
    assert.equal(cacheScope, 'private', 'lists that depend on the caller must not be shared (caching §Cache Scope)');
    assert.deepEqual((await modernTools(KEYS.ops)).names, ['delete_user', 'get_user', 'search']);
  });

  test('a legacy client sees the same filtered list through its session', async () => {
    const init = await post(gw.url, initialize(), bearer(KEYS.reader));
    const headers = { ...bearer(KEYS.reader), 'mcp-session-id': init.headers['mcp-session-id'] as string, 'mcp-protocol-version': '2025-11-25' };
    const list = await post(gw.url, rpc(2, 'tools/list'), headers);
    const body = list.text.startsWith('{') ? list.json() : JSON.parse(/data: (.*)/.exec(list.text)![1]!);
    assert.deepEqual((body.result.tools as Array<{ name: string }>).map((t) => t.name), ['get_user', 'search']);
    const hidden = await post(gw.url, rpc(3, 'tools/call', { name: 'delete_user', arguments: {} }), headers);
    const hiddenBody = hidden.text.startsWith('{') ? hidden.json() : JSON.parse(/data: (.*)/.exec(hidden.text)![1]!);
    assert.equal(hiddenBody.error.code, -32602);
  });

  test('a policy rule hides delete tools from the support group', async () => {
    const support = await as.sign({ sub: 'bob', aud: PUBLIC_URL, scope: 'mcp:tools', groups: ['support'] });
    clientCredentials.add(support);
    assert.deepEqual((await modernTools(support)).names, ['get_user', 'search']);
  });

  test('calling a hidden tool answers exactly like calling one that does not exist', async () => {
    const calls = upstream.requests.length;
    const hidden = await call(KEYS.reader, 'delete_user');
    const afterHidden = upstream.requests.length;
    const missing = await call(KEYS.reader, 'no_such_tool');
    // Both take the same path (a fresh list, then the refusal), so not even the work done differs.
    assert.equal(upstream.requests.length - afterHidden, afterHidden - calls, 'the same upstream traffic for both');
    assert.equal(hidden.error.code, -32602);
    assert.equal(missing.error.code, -32602);
    assert.equal(hidden.error.message.replace('delete_user', 'X'), missing.error.message.replace('no_such_tool', 'X'));
    assert.deepEqual(Object.keys(hidden.error).sort(), Object.keys(missing.error).sort());
    assert.ok(!upstream.requests.slice(calls).some((r) => r.body.includes('"delete_user"') && r.body.includes('tools/call')), 'the hidden call never went up');
    assert.equal((await call(KEYS.ops, 'delete_user')).result.content[0].text, 'called delete_user');
  });

  test('/health shows the caller its resolved grant, and refuses callers without credentials', async () => {
    const res = await request(`${gw.origin}/health`, { headers: { authorization: `Bearer ${KEYS.reader}` } });
    assert.equal(res.statusCode, 200);
    const grant = (await res.body.json()) as Record<string, unknown>;
    assert.equal(grant.subject, 'key:reader');
    assert.equal(grant.tenant, 'acme');
    assert.deepEqual(grant.scopes, ['mcp:tools']);
    assert.equal(grant.keyId, 'reader');
    assert.equal(grant.visibleTools, 2);
    assert.ok(!JSON.stringify(grant).includes(KEYS.reader));
    const anonymous = await request(`${gw.origin}/health`);
    assert.equal(anonymous.statusCode, 401);
    await anonymous.body.dump();
    // Each gets its request line (README §Logs); the refusal's call id names it (found by the fuzzer).
    const callId = anonymous.headers['x-gatehouse-call-id'] as string;
    assert.ok(await waitUntil(() => gw.logs.some((l) => l.msg === 'request' && l.callId === callId), 2_000), 'the refusal has its request line');
    assert.deepEqual(gw.logs.filter((l) => l.msg === 'request' && l.callId === callId).map((l) => [l.method, l.status, l.outcome]), [['GET', 401, 'refused']]);
    assert.ok(gw.logs.some((l) => l.msg === 'request' && l.method === 'GET' && l.status === 200 && l.subject === 'key:reader'));
  });
});

describe('legacy sessions are bound to their caller', () => {
  test("another caller presenting a session id gets 404, as if it did not exist", async () => {
    const init = await post(gw.url, initialize(), bearer(KEYS.ops));
    const session = init.headers['mcp-session-id'] as string;
    const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    const owner = await post(gw.url, rpc(2, 'tools/list'), { ...bearer(KEYS.ops), ...headers });
    assert.equal(owner.status, 200);
    const thief = await post(gw.url, rpc(2, 'tools/list'), { ...bearer(KEYS.reader), ...headers });
    assert.equal(thief.status, 404);
    assert.equal(thief.json().error.code, -32001);
  });
});

describe('callers never share an upstream session', () => {
  test('modern calls of two callers to a legacy upstream go through two different upstream sessions', async () => {
    const jwt = await as.sign({ sub: 'carol', aud: PUBLIC_URL, scope: 'mcp:tools', groups: ['ops'] });
    clientCredentials.add(jwt);
    const callAs = async (credential: string, name: string) => {
      const req = modernRequest(21, 'tools/call', { name, arguments: {} });
      const res = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${credential}` });
      assert.equal(res.json().result.content[0].text, `called ${name}`);
    };
    await callAs(KEYS.ops, 'search');
    await callAs(jwt, 'get_user');
    const sessionOf = (name: string) => upstream.requests.filter((r) => r.body.includes('"tools/call"') && r.body.includes(`"${name}"`)).at(-1)?.headers['mcp-session-id'];
    assert.ok(sessionOf('search') && sessionOf('get_user'));
    assert.notEqual(sessionOf('search'), sessionOf('get_user'), 'GATEWAY-REQUIREMENTS §Session management: pool by principal');
  });
});

describe('config reload', () => {
  test('a reload swaps the keys: the removed key is refused from the next request on, the new one works', async () => {
    const { validateConfigObject } = await import('../../src/config/load.js');
    const oldKey = 'gh_reload_old_key_0123456789abcdefghijklm';
    const newKey = 'gh_reload_new_key_0123456789abcdefghijklm';
    const config = (key: string) => ({ upstreams: [{ name: 'crm', url: upstream.url }], auth: { apiKeys: [{ id: 'k', hash: hashKey(key), scopes: [] }] } });
    const reloaded = await startGateway(config(oldKey));
    try {
      clientCredentials.add(oldKey).add(newKey);
      assert.equal((await post(reloaded.url, initialize(), bearer(oldKey))).status, 200);
      assert.deepEqual(await reloaded.gateway.reload(validateConfigObject({ ...config(newKey), listen: { host: '127.0.0.1', port: 0 } }, 'test')), []);
      assert.equal((await post(reloaded.url, initialize(), bearer(oldKey))).status, 401);
      assert.equal((await post(reloaded.url, initialize(), bearer(newKey))).status, 200);
    } finally {
      await reloaded.close();
    }
  });

  test('a reload that keeps the OAuth settings keeps the signing keys it already fetched', async () => {
    const { validateConfigObject } = await import('../../src/config/load.js');
    const oauth = { issuer: as.issuer, jwksUri: as.jwksUri, audience: PUBLIC_URL };
    const config = (keyId: string) => ({ listen: { host: '127.0.0.1', port: 0, publicUrl: PUBLIC_URL }, upstreams: [{ name: 'crm', url: upstream.url }], auth: { oauth, apiKeys: [{ id: keyId, hash: hashKey(`gh_${keyId}_0123456789abcdefghijklmnopqrst`), scopes: [] }] } });
    const reloaded = await startGateway(config('first'));
    try {
      const token = await as.sign({ sub: 'dora', aud: PUBLIC_URL });
      clientCredentials.add(token);
      assert.equal((await post(reloaded.url, initialize(), bearer(token))).status, 200);
      const fetches = as.hits.get('/jwks') ?? 0;
      assert.deepEqual(await reloaded.gateway.reload(validateConfigObject(config('second'), 'test')), []);
      assert.equal((await post(reloaded.url, initialize(), bearer(token))).status, 200);
      assert.equal(as.hits.get('/jwks') ?? 0, fetches, 'no new key-set fetch after the reload');
    } finally {
      await reloaded.close();
    }
  });
});
