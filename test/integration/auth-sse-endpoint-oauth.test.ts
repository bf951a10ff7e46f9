// OAuth on the 2024-11-05 HTTP+SSE endpoint (listen.ssePath), which takes the same credentials as the MCP
// endpoint (README: "The same … authentication (in headers only) … apply as on listen.path"). A client that
// meets its 401 follows the challenge's resource_metadata, and RFC 9728 §3.3 has it use the document only
// when its `resource` is the URL it called (the v1 SDK accepts a path prefix of it: checkResourceAllowed);
// it then asks for a token for that resource (RFC 8707), whose `aud` the gateway must accept. The MCP
// endpoint's document names listen.publicUrl (…/mcp), no prefix of …/sse: so the SSE endpoint has its own
// document, naming its own public URL, and tokens for it are accepted. Real v1 SDK SSE client, a real
// authorization server minting `aud` from the `resource` asked for (test/helpers/auth-server.ts).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { startOAuthGateway } from '../helpers/oauth-gateway.js';

const { as, upstream, origin, close } = await startOAuthGateway({
  client: { id: 'sse-client', secret: 'sse-secret' },
  listen: { ssePath: '/sse' },
  auth: { failureLimit: { attempts: 0 }, requiredScopes: ['mcp:tools'] },
});
after(close);

test('the SSE endpoint\'s 401 names a metadata document whose resource is the SSE endpoint\'s URL', async () => {
  const res = await fetch(`${origin}/sse`, { headers: { accept: 'text/event-stream' } });
  await res.body?.cancel();
  assert.equal(res.status, 401);
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(res.headers.get('www-authenticate') ?? '')?.[1];
  assert.equal(metadataUrl, `${origin}/.well-known/oauth-protected-resource/sse`);
  const doc = (await (await fetch(metadataUrl)).json()) as { resource?: string; authorization_servers?: string[] };
  assert.equal(doc.resource, `${origin}/sse`);
  assert.deepEqual(doc.authorization_servers, [as.issuer]);
  // The MCP endpoint's challenge and document are unchanged.
  const mcp = await fetch(`${origin}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
  assert.equal(mcp.status, 401);
  assert.match(mcp.headers.get('www-authenticate') ?? '', new RegExp(`resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`));
});

test('v1 SDK SSE client: discovers the authorization server from the 401, gets a token for the SSE endpoint, and is served', async () => {
  const tokensBefore = as.hits.get('/token') ?? 0;
  const provider = new ClientCredentialsProvider({ clientId: 'sse-client', clientSecret: 'sse-secret', scope: 'mcp:tools', expectedIssuer: as.issuer });
  const client = new V1Client({ name: 'v1-sse-oauth', version: '1' });
  try {
    await client.connect(new SSEClientTransport(new URL(`${origin}/sse`), { authProvider: provider }));
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['echo']);
  } finally {
    await client.close();
  }
  assert.ok((as.hits.get('/token') ?? 0) > tokensBefore, 'the token came from the authorization server');
  for (const r of upstream.requests) assert.equal(r.headers.authorization, undefined, 'the client token never went upstream');
});

test('a token for another resource is still refused on both endpoints', async () => {
  const foreign = await as.sign({ sub: 'mallory', aud: `${origin}/other`, scope: 'mcp:tools' });
  const sse = await fetch(`${origin}/sse`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${foreign}` } });
  await sse.body?.cancel();
  assert.equal(sse.status, 401);
  assert.match(sse.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  const mcp = await fetch(`${origin}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${foreign}` }, body: '{}' });
  assert.equal(mcp.status, 401);
});
