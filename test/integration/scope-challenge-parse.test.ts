// What a real client reads from a 403 insufficient_scope challenge (2025-11-25/basic/authorization.mdx
// §Runtime Insufficient Scope Errors: `scope` names the scopes to ask for; §Step-Up Authorization Flow). The
// v1 SDK client takes each parameter as the first `name=` in the header (extractWWWAuthenticateParams), and
// the challenge's error_description names the item asked for: a resource URI is chosen by the client, or by
// an upstream in a resource link it follows, and may hold `scope=` itself. The scopes the client then asks
// the authorization server for must be the gateway's, never text from the URI. Real gateway, real JWKS
// issuer (test/helpers/auth-server.ts), the v2 SDK's modern server upstream, the v1 SDK's own parser.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import type { AuthServer } from '../helpers/auth-server.js';
import type { TestGateway } from '../helpers/gateway.js';
import { modernRequest } from '../helpers/http.js';
import { startScopeChallengeGateway, type ScopeChallengeGateway } from '../helpers/scope-challenge-gateway.js';

const PUBLIC_URL = 'https://mcp.example.test/mcp';

let as: AuthServer;
let gw: TestGateway;
let setup: ScopeChallengeGateway | undefined;

before(async () => {
  setup = await startScopeChallengeGateway(PUBLIC_URL, ['mcp:tools', 'reports:read'], [
    { id: 'reports', scopes: ['reports:read'], onMissingScopes: 'challenge', access: 'allow', resources: ['file:///reports/*'] },
    { id: 'tools', access: 'allow', tools: ['m/*'] },
  ]);
  ({ as, gw } = setup);
});

after(async () => {
  await setup?.close();
});

test('a resource URI holding "scope=" does not change the scopes the v1 SDK client reads from the 403', async () => {
  const token = await as.sign({ sub: 'alice', aud: PUBLIC_URL, scope: 'mcp:tools' });
  const m = modernRequest(1, 'resources/read', { uri: 'file:///reports/q3?scope=admin:all' });
  const res = await fetch(gw.url, { method: 'POST', headers: { ...m.headers, authorization: `Bearer ${token}` }, body: m.body });
  assert.equal(res.status, 403, await res.clone().text());
  const params = extractWWWAuthenticateParams(res);
  assert.equal(params.error, 'insufficient_scope');
  assert.equal(params.scope, 'mcp:tools reports:read', `the v1 SDK would ask for what it read here; challenge: ${res.headers.get('www-authenticate')}`);
  assert.equal(params.resourceMetadataUrl?.href, 'https://mcp.example.test/.well-known/oauth-protected-resource/mcp');
});
