// Gatehouse behind a reverse proxy that serves it under a path prefix and strips the prefix
// (`https://host/gw/…` → Gatehouse's `/…`): `listen.publicUrl` is `…/gw/mcp`, `listen.path` is `/mcp`, and
// the proxy routes nothing outside `/gw/` to Gatehouse. A client that meets the 401 follows the challenge's
// `resource_metadata` (RFC 9728 §5.1; 2025-11-25/basic/authorization.mdx §Protected Resource Metadata
// Discovery Requirements: "MCP clients MUST use [it] when present"), so that URL must be one the client can
// reach through the proxy; the document it finds must name the URL the client used as its `resource`
// (RFC 9728 §3.3), and the token minted for it must be accepted. The SSE endpoint already keeps the prefix
// in the URLs it hands out (sse-endpoint.ts); the challenge did not. Real v1 and v2 SDK clients, a real
// authorization server (test/helpers/auth-server.ts), a small prefix-stripping proxy.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider as V1ClientCredentials } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { SSEClientTransport as V1SseTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { Client as V2Client, ClientCredentialsProvider as V2ClientCredentials, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { freePort, startAuthServer, type AuthServer } from '../helpers/auth-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { jsonEchoServer, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';

let as: AuthServer;
let upstream: FakeUpstream;
let gw: TestGateway;
let proxy: Server;
let publicUrl: string;
/** Every request line the proxy saw, and whether it was routed to Gatehouse. */
const proxied: Array<{ line: string; routed: boolean }> = [];

before(async () => {
  as = await startAuthServer();
  as.clients.set('prefix-client', 'prefix-secret');
  upstream = await startFakeUpstream(jsonEchoServer);
  const proxyPort = await freePort();
  publicUrl = `http://127.0.0.1:${proxyPort}/gw/mcp`;
  gw = await startGateway({
    listen: { path: '/mcp', publicUrl, ssePath: '/sse' },
    upstreams: [{ name: 'up', url: upstream.url }],
    auth: { requiredScopes: ['mcp:tools'], oauth: { issuer: as.issuer, audience: publicUrl, scopesSupported: ['mcp:tools'] } },
  });
  const target = new URL(gw.origin);
  proxy = createServer((req, res) => {
    const url = req.url ?? '/';
    const routed = url.startsWith('/gw/');
    proxied.push({ line: `${req.method} ${url}`, routed });
    if (!routed) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not routed by the proxy');
    const forward = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: url.slice('/gw'.length), headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(proxyPort, '127.0.0.1', () => resolve()));
});

after(async () => {
  proxy?.closeAllConnections();
  await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
  await gw?.close();
  await upstream?.close();
  await as?.close();
});

test('the 401 names a resource_metadata URL behind the prefix, and the document there names the public URL', async () => {
  const res = await fetch(publicUrl, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
  assert.equal(res.status, 401);
  const challenge = res.headers.get('www-authenticate') ?? '';
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
  assert.ok(metadataUrl, challenge);
  assert.ok(metadataUrl.startsWith(new URL(publicUrl).origin + '/gw/'), `the metadata URL is reachable through the prefix: ${metadataUrl}`);
  const doc = await fetch(metadataUrl);
  assert.equal(doc.status, 200, `GET ${metadataUrl}`);
  const body = (await doc.json()) as { resource?: string; authorization_servers?: string[] };
  assert.equal(body.resource, publicUrl, 'RFC 9728 §3.3: the resource is the URL the client called');
  assert.deepEqual(body.authorization_servers, [as.issuer]);
});

/** What both SDK generations offer; enough to prove an authenticated session works end to end. */
interface SdkClient {
  listTools(): Promise<{ tools: Array<{ name: string }> }>;
  close(): Promise<void>;
}

async function listAndClose(client: SdkClient): Promise<void> {
  try {
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['echo']);
  } finally {
    await client.close();
  }
}

test('v1 SDK client: discovers the authorization server from the 401 through the proxy and connects', async () => {
  const tokensBefore = as.hits.get('/token') ?? 0;
  const provider = new V1ClientCredentials({ clientId: 'prefix-client', clientSecret: 'prefix-secret', scope: 'mcp:tools', expectedIssuer: as.issuer });
  const client = new V1Client({ name: 'v1-prefix', version: '1' });
  await client.connect(new V1Transport(new URL(publicUrl), { authProvider: provider }));
  await listAndClose(client);
  assert.ok((as.hits.get('/token') ?? 0) > tokensBefore, 'the token came from the authorization server the metadata names');
  assert.deepEqual(proxied.filter((p) => !p.routed && p.line.includes('/token')), [], 'no client credentials were sent to the MCP host');
});

test('v2 SDK client: the same through the proxy', async () => {
  const provider = new V2ClientCredentials({ clientId: 'prefix-client', clientSecret: 'prefix-secret', scope: 'mcp:tools', expectedIssuer: as.issuer });
  const client = new V2Client({ name: 'v2-prefix', version: '1' });
  await client.connect(new V2Transport(new URL(publicUrl), { authProvider: provider }));
  await listAndClose(client);
});

test('v1 SDK SSE client (2024-11-05 endpoint) through the proxy: its own metadata under the prefix, its token accepted', async () => {
  const sseUrl = publicUrl.replace(/\/mcp$/, '/sse');
  const res = await fetch(sseUrl, { headers: { accept: 'text/event-stream' } });
  await res.body?.cancel();
  assert.equal(res.status, 401);
  assert.match(res.headers.get('www-authenticate') ?? '', new RegExp(`resource_metadata="${new URL(publicUrl).origin}/gw/.well-known/oauth-protected-resource/sse"`));
  const provider = new V1ClientCredentials({ clientId: 'prefix-client', clientSecret: 'prefix-secret', scope: 'mcp:tools', expectedIssuer: as.issuer });
  const client = new V1Client({ name: 'v1-sse-prefix', version: '1' });
  await client.connect(new V1SseTransport(new URL(sseUrl), { authProvider: provider }));
  await listAndClose(client);
});
