// The admin API takes an OAuth access token of one of admin.groups, verified as on the MCP endpoint
// (issuer, audience, signature). auth.requiredScopes are the scopes "every caller needs to use the MCP
// endpoint at all" (docs/configuration.md): they are not the admin API's. A reviewer's valid token without
// them is a reviewer's token, not a guess.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { freePort, startAuthServer, type AuthServer } from '../helpers/auth-server.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

let as: AuthServer;
let up: FakeUpstream;
let gw: TestGateway;
let publicUrl: string;

before(async () => {
  as = await startAuthServer();
  up = await startFakeUpstream((_req, res) => void res.writeHead(405).end());
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}/mcp`;
  gw = await startGateway({
    listen: { port, publicUrl },
    upstreams: [{ name: 'up', url: up.url }],
    auth: { requiredScopes: ['mcp:tools'], failureLimit: { attempts: 3 }, oauth: { issuer: as.issuer, audience: publicUrl, groupsClaim: 'groups' } },
    admin: { enabled: true, port: 0, groups: ['sre'] },
  });
});
after(async () => {
  await gw?.close();
  await up?.close();
  await as?.close();
});

test("a reviewer's token without the MCP endpoint's requiredScopes is taken by the admin API, and is no failed attempt", async () => {
  const token = await as.sign({ sub: 'carol', aud: publicUrl, groups: ['sre'], scope: 'openid' });
  for (let i = 0; i < 5; i++) {
    const res = await request(`${gw.gateway.adminUrl}/approvals`, { headers: { authorization: `Bearer ${token}` } });
    const text = await res.body.text();
    assert.equal(res.statusCode, 200, `attempt ${i + 1}: ${text}`);
  }
  // The MCP endpoint still asks for its scopes (2026-07-28 authorization §Runtime Insufficient Scope Errors),
  // and the address was never counted as guessing: 403, not 429.
  const mcp = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }), { ...LEGACY_HEADERS, authorization: `Bearer ${token}` });
  assert.equal(mcp.status, 403, mcp.text);
  assert.match(String(mcp.headers['www-authenticate']), /error="insufficient_scope", scope="mcp:tools"/);
  // A token of no admin group is still refused by the admin API.
  const outsider = await request(`${gw.gateway.adminUrl}/approvals`, { headers: { authorization: `Bearer ${await as.sign({ sub: 'eve', aud: publicUrl, groups: ['sales'], scope: 'mcp:tools' })}` } });
  await outsider.body.dump();
  assert.equal(outsider.statusCode, 403);
});
