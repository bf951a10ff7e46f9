// `auth.anonymous: true` next to `auth.requiredScopes` (and a real way in: API keys, OAuth). The anonymous
// identity holds no scopes, so a request without any credential cannot be served as it is; it must be told to
// authenticate: 401 with a challenge naming the protected-resource metadata (RFC 6750 §3.1: a request that
// lacks authentication information gets no error code; RFC 9728 §5.1; 2026-07-28/basic/authorization/index.mdx
// §Error Handling "401 Authorization required", §Authorization Flow Steps; 2025-11-25/basic/authorization.mdx
// §Authorization Server Location). A credential with too few scopes still gets 403 insufficient_scope
// (§Runtime Insufficient Scope Errors). Until 4 December a request without a credential got 403
// insufficient_scope, and a client, which reads 403 as "your token lacks scopes", never started to authenticate.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { Client as V2Client, ClientCredentialsProvider, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { hashKey } from '../../src/auth/key-hash.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { startOAuthGateway } from '../helpers/oauth-gateway.js';

const KEY = 'gh_anon_scoped_key_0123456789abcdefghijklm';
const BARE_KEY = 'gh_anon_bare_key_0123456789abcdefghijklmno';
const { as, upstream, gw, origin, close } = await startOAuthGateway({
  client: { id: 'sdk-client', secret: 'sdk-secret' },
  auth: {
    anonymous: true,
    requiredScopes: ['mcp:tools'],
    failureLimit: { attempts: 0 },
    apiKeys: [
      { id: 'scoped', hash: hashKey(KEY), scopes: ['mcp:tools'] },
      { id: 'bare', hash: hashKey(BARE_KEY), scopes: [] },
    ],
  },
});
after(close);
const metadataUrl = `${origin}/.well-known/oauth-protected-resource/mcp`;

const INIT = rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } });

test('a POST without any credential gets 401 and a challenge with resource_metadata, not 403', async () => {
  const res = await post(gw.url, INIT);
  assert.equal(res.status, 401, res.text);
  const challenge = res.headers['www-authenticate'] as string;
  assert.match(challenge, /^Bearer /);
  assert.ok(challenge.includes(`resource_metadata="${metadataUrl}"`), challenge);
  // RFC 6750 §3.1: no error code when the request carried no authentication information at all.
  assert.doesNotMatch(challenge, /error=/);
  assert.match(challenge, /scope="mcp:tools"/, 'the scopes to ask for (§Scope Selection Strategy)');
  assert.equal(res.json().error?.data?.reason, 'missing_credentials');
  assert.equal(upstream.requests.length, 0, 'nothing reached the upstream');
});

test('a GET stream and a DELETE without any credential get 401 with the challenge too', async () => {
  for (const method of ['GET', 'DELETE'] as const) {
    const res = await request(gw.url, { method, headers: { accept: 'text/event-stream', 'mcp-session-id': 'whatever' } });
    await res.body.dump();
    assert.equal(res.statusCode, 401, method);
    assert.ok(String(res.headers['www-authenticate']).includes(`resource_metadata="${metadataUrl}"`), method);
  }
});

test('a credential with too few scopes still gets 403 insufficient_scope; one with them is served', async () => {
  const bare = await post(gw.url, INIT, { ...LEGACY_HEADERS, authorization: `Bearer ${BARE_KEY}` });
  assert.equal(bare.status, 403, bare.text);
  assert.match(bare.headers['www-authenticate'] as string, /error="insufficient_scope", scope="mcp:tools"/);
  const scoped = await post(gw.url, INIT, { ...LEGACY_HEADERS, authorization: `Bearer ${KEY}` });
  assert.equal(scoped.status, 200, scoped.text);
});

// The v2 client also steps up from a 403 naming the scopes, so this passed before the fix too: it guards that
// the 401 path keeps the official client working end to end.
test('the official v2 client, sent no credential, finds the authorization server from the 401 and gets in', async () => {
  const tokensBefore = as.hits.get('/token') ?? 0;
  const provider = new ClientCredentialsProvider({ clientId: 'sdk-client', clientSecret: 'sdk-secret', scope: 'mcp:tools', expectedIssuer: as.issuer });
  const client = new V2Client({ name: 'v2-anon-scoped', version: '1' });
  try {
    await client.connect(new V2Transport(new URL(gw.url), { authProvider: provider }));
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['echo']);
  } finally {
    await client.close();
  }
  assert.ok((as.hits.get('/token') ?? 0) > tokensBefore, 'it fetched a token from the server named in the metadata');
});
