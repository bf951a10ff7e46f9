// An issuer whose metadata cannot be had, with no auth.oauth.jwksUri configured: every token is refused 503
// (fail closed, README "If the key set … is unreachable, Gatehouse answers 503"), and the warning the
// operator gets must say why, at the level it is logged at: the issuer unreachable, its metadata missing
// (a mistyped issuer), or naming another issuer (a trailing slash too many: RFC 8414 §3.3 compares them
// exactly). Until 4 December each of these logged only `signing key set fetch failed: issuer metadata not
// found`, the reasons at debug level. Real HTTP servers on 127.0.0.1; jose signs the token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPair, SignJWT } from 'jose';
import type { OAuthConfig } from '../../../src/config/types.js';
import { createLogger } from '../../../src/log/logger.js';
import { TokenVerifier } from '../../../src/auth/token-verifier.js';
import { closedAfterTests } from '../../helpers/cleanup.js';

const AUDIENCE = 'https://gateway.test/mcp';
const { servers, verifiers } = closedAfterTests<TokenVerifier>();
const { privateKey } = await generateKeyPair('RS256');

/** A server answering each well-known path from `answers` (status, body), 404 otherwise. */
async function issuerServer(answers: (base: string) => Record<string, [number, unknown]>): Promise<string> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const table = answers(base);
  server.on('request', (req, res) => {
    const [status, body] = table[req.url ?? ''] ?? [404, { error: 'not_found' }];
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  return base;
}

/** The warn-level (and above) lines one verifier of `issuer` logs while refusing one token. */
async function warningsFor(issuer: string): Promise<string[]> {
  const lines: string[] = [];
  const log = createLogger('info', (l) => lines.push(l));
  const config: OAuthConfig = { issuer, audience: AUDIENCE, clockSkewSeconds: 30, jwksMaxAgeSeconds: 600, jwksMinRefreshSeconds: 60, requireAccessTokenType: false };
  const v = new TokenVerifier(config, log);
  verifiers.push(v);
  const token = await new SignJWT({ sub: 'u', aud: AUDIENCE }).setProtectedHeader({ alg: 'RS256', kid: 'k' }).setIssuer(issuer).setIssuedAt().setExpirationTime('5m').sign(privateKey);
  const result = await v.verify(token);
  assert.deepEqual(result.ok ? 'accepted' : result.failure.kind, 'unavailable', 'fail closed, retryable');
  return lines.filter((l) => /"level":"(warn|error)"/.test(l));
}

test('the issuer unreachable: the warning names its metadata URL and the connection failure', async () => {
  const gone = await issuerServer(() => ({}));
  const server = servers.pop()!;
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  const text = (await warningsFor(gone)).join('\n');
  assert.ok(text.includes(`${gone}/.well-known/oauth-authorization-server`), text);
  assert.match(text, /ECONNREFUSED/, text);
});

test('no metadata at any well-known URL (a mistyped issuer): the warning says HTTP 404 for each', async () => {
  const base = await issuerServer(() => ({}));
  const text = (await warningsFor(`${base}/realms/typo`)).join('\n');
  for (const url of [`${base}/.well-known/oauth-authorization-server/realms/typo`, `${base}/.well-known/openid-configuration/realms/typo`, `${base}/realms/typo/.well-known/openid-configuration`]) {
    assert.ok(text.includes(`${url}: HTTP 404`), `${url} in\n${text}`);
  }
});

test('metadata naming the issuer without the configured trailing slash: the warning names both', async () => {
  const base = await issuerServer((b) => ({ '/.well-known/oauth-authorization-server': [200, { issuer: b, jwks_uri: `${b}/jwks` }] }));
  const text = (await warningsFor(`${base}/`)).join('\n');
  assert.ok(text.includes(`names the issuer ${base}, not ${base}/`), text);
});
