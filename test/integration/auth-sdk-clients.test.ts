// Official SDK clients against an authenticating Gatehouse: the v1 client with a bearer API key, and the
// v2 client doing the whole discovery itself. It gets a 401, reads `resource_metadata` from the challenge
// (RFC 9728), finds the authorization server's metadata (RFC 8414), gets a token with client credentials
// for this resource (RFC 8707), and retries. Spec: 2026-07-28/basic/authorization/index.mdx §Authorization
// Flow Steps; authorization-server-discovery.mdx.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V2Client, ClientCredentialsProvider, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { hashKey } from '../../src/auth/key-hash.js';
import { startOAuthGateway } from '../helpers/oauth-gateway.js';

const API_KEY = 'gh_sdk_client_key_0123456789abcdefghijklmn';
const { as, upstream, gw, close } = await startOAuthGateway({
  client: { id: 'sdk-client', secret: 'sdk-secret' },
  auth: { requiredScopes: ['mcp:tools'], apiKeys: [{ id: 'sdk', hash: hashKey(API_KEY), scopes: ['mcp:tools'] }] },
});
after(close);

/** What both SDK generations offer; enough to prove an authenticated session works end to end. */
interface SdkClient {
  listTools(): Promise<{ tools: Array<{ name: string }> }>;
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<object>;
  close(): Promise<void>;
}

async function listCallAndClose(client: SdkClient): Promise<void> {
  try {
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['echo']);
    const result = await client.callTool({ name: 'echo', arguments: {} });
    assert.deepEqual((result as { content?: unknown }).content, [{ type: 'text', text: 'echoed' }]);
  } finally {
    await client.close();
  }
}

test('v1 SDK client with a bearer API key: connect, list, call', async () => {
  const client = new V1Client({ name: 'v1-auth', version: '1' });
  await client.connect(new V1Transport(new URL(gw.url), { requestInit: { headers: { Authorization: `Bearer ${API_KEY}` } } }));
  await listCallAndClose(client);
});

test('v1 SDK client without credentials is refused with 401', async () => {
  const client = new V1Client({ name: 'v1-anon', version: '1' });
  await assert.rejects(client.connect(new V1Transport(new URL(gw.url))), /401|Unauthorized|auth/i);
  await client.close().catch(() => {});
});

test('v2 SDK client discovers the authorization server from the 401 and authenticates by itself', async () => {
  const before = { prm: gw.logs.length, token: as.hits.get('/token') ?? 0 };
  const provider = new ClientCredentialsProvider({ clientId: 'sdk-client', clientSecret: 'sdk-secret', scope: 'mcp:tools', expectedIssuer: as.issuer });
  const client = new V2Client({ name: 'v2-auth', version: '1' });
  await client.connect(new V2Transport(new URL(gw.url), { authProvider: provider }));
  await listCallAndClose(client);
  assert.ok((as.hits.get('/token') ?? 0) > before.token, 'the client fetched a token from the server named in the metadata');
  assert.ok((as.hits.get('/.well-known/oauth-authorization-server') ?? 0) + (as.hits.get('/.well-known/openid-configuration') ?? 0) > 0, 'it read the AS metadata');
  assert.ok(gw.logs.slice(before.prm).some((l) => l.reason === 'missing_credentials'), 'its first attempt was challenged with a 401');
  // The token it used was minted for this gateway (RFC 8707) and never went upstream.
  for (const r of upstream.requests) assert.equal(r.headers.authorization, undefined);
});

test('2025-03-26 clients find the authorization server at the gateway origin: the issuer\'s own metadata', async () => {
  // GATEWAY-REQUIREMENTS §14: that revision looked for /.well-known/oauth-authorization-server at the MCP origin.
  const res = await fetch(`${gw.origin}/.well-known/oauth-authorization-server`);
  assert.equal(res.status, 200);
  const doc = (await res.json()) as Record<string, unknown>;
  assert.equal(doc.issuer, as.issuer, 'unchanged: the issuer is the real authorization server');
  assert.equal(doc.token_endpoint, `${as.issuer}/token`);
});
