// auth.oauth.requireAccessTokenType: the JWT's `typ` header must say it is an access token, `at+jwt` (RFC 9068
// §2.1; §4: a resource server MUST check it, `application/at+jwt` too, media types being case-insensitive).
// Without the check an OpenID Connect ID token (`typ: JWT`) of the same issuer, for the same audience (an
// ID token's aud is the client id, which some deployments make the resource's URL) and with a `sub`, passed as
// an access token: a token minted to tell a client who signed in was taken as a grant to call tools. Off by
// default, since many issuers still mint access tokens with `typ: JWT`; on, such a token is refused 401
// invalid_token (2026-07-28 basic/authorization §Token Handling: tokens not meant for this resource are
// refused) and nothing reaches the upstream. Tokens are minted with jose, their keys served by a real JWKS
// endpoint on 127.0.0.1 (test/helpers/auth-server.ts); the upstream is the v1 SDK's server, the client the v1 SDK's.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT } from 'jose';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startAuthServer, type AuthServer } from '../helpers/auth-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';
import { startTaskHttpServer, type TaskHttpServer } from '../fixtures/upstreams/task-tools.js';

const PUBLIC_URL = 'https://mcp.example.test/mcp';

let as: AuthServer;
let upstream: TaskHttpServer;
const gateways: TestGateway[] = [];

before(async () => {
  as = await startAuthServer();
  upstream = await startTaskHttpServer();
});
after(async () => {
  await Promise.all(gateways.map((gw) => gw.close()));
  await upstream?.close();
  await as?.close();
});

async function gateway(requireAccessTokenType?: boolean): Promise<TestGateway> {
  const gw = await startGateway({
    listen: { publicUrl: PUBLIC_URL },
    upstreams: [{ name: 'tools', url: upstream.url }],
    auth: {
      failureLimit: { attempts: 0 },
      oauth: { issuer: as.issuer, jwksUri: as.jwksUri, audience: PUBLIC_URL, ...(requireAccessTokenType !== undefined ? { requireAccessTokenType } : {}) },
    },
  });
  gateways.push(gw);
  return gw;
}

/** A token of the test issuer for this gateway, signed with its published key, with the `typ` header given (none: undefined). */
function token(typ: string | undefined): Promise<string> {
  const key = as.published[0]!;
  return new SignJWT({ sub: 'alice', aud: PUBLIC_URL, scope: 'mcp:tools' })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, ...(typ !== undefined ? { typ } : {}) })
    .setIssuer(as.issuer)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(key.privateKey);
}

const initialize = rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'typ-test', version: '1' } });

/** The SDK client connects with this token and lists the upstream's tools. */
async function connects(gw: TestGateway, bearer: string): Promise<string[]> {
  const client = new Client({ name: 'typ-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }));
  try {
    return (await client.listTools()).tools.map((t) => t.name);
  } finally {
    await client.close();
  }
}

describe('auth.oauth.requireAccessTokenType: true', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await gateway(true);
  });

  for (const typ of ['at+jwt', 'application/at+jwt', 'AT+JWT', 'Application/At+Jwt']) {
    test(`an access token typed "${typ}" is accepted (RFC 9068 §4, compared case-insensitively)`, async () => {
      assert.ok((await connects(gw, await token(typ))).includes('report'));
    });
  }

  for (const [what, typ] of [['an ID token, typ "JWT"', 'JWT'], ['a token with no typ', undefined], ['a token of another type ("dpop+jwt")', 'dpop+jwt']] as const) {
    test(`${what}, same issuer, audience and subject, is refused 401 invalid_token and reaches nothing`, async () => {
      const res = await post(gw.url, initialize, { ...LEGACY_HEADERS, authorization: `Bearer ${await token(typ)}` });
      assert.equal(res.status, 401, res.text);
      const challenge = String(res.headers['www-authenticate']);
      assert.match(challenge, /^Bearer /);
      assert.match(challenge, /error="invalid_token"/);
      // The body says why, and names the reason for logs and metrics.
      assert.equal(res.json().error.data.reason, 'wrong_type', res.text);
      assert.match(res.json().error.message, /at\+jwt/);
      assert.equal(res.headers['mcp-session-id'], undefined);
    });
  }
});

describe('auth.oauth.requireAccessTokenType left out (off by default)', () => {
  test('a token typed "JWT", as many issuers mint access tokens, is accepted as before', async () => {
    const gw = await gateway();
    assert.ok((await connects(gw, await token('JWT'))).includes('report'));
  });
});
