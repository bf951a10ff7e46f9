// Tokens without a `kid` (RFC 7515 §4.1.4: OPTIONAL) from an issuer whose key set holds more than one key that
// fits the token's algorithm: during a rotation the old and the new key are both published for a while.
// The token's signature says which key made it; each fitting key is tried, as jose's own key-set resolver
// does (JWKSMultipleMatchingKeys). Until 4 December Gatehouse took a kid-less token only when exactly one
// key fitted, so throughout every rotation overlap each such token was refused 401 unknown_kid. A token none
// of them signed is still refused. The key set is served for real over HTTP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { OAuthConfig } from '../../../src/config/types.js';
import { createLogger } from '../../../src/log/logger.js';
import { TokenVerifier } from '../../../src/auth/token-verifier.js';
import { closedAfterTests } from '../../helpers/cleanup.js';

const AUDIENCE = 'https://gateway.test/mcp';
const ISSUER = 'https://issuer.test';
const { servers, verifiers } = closedAfterTests<TokenVerifier>();

async function rsaKey(): Promise<{ privateKey: CryptoKey; jwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  // Published as such issuers do: no kid, no alg.
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), use: 'sig' } };
}

function signed(privateKey: CryptoKey, sub: string): Promise<string> {
  return new SignJWT({ sub }).setProtectedHeader({ alg: 'RS256' }).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().setExpirationTime('5m').sign(privateKey);
}

test('a kid-less token verifies against whichever published key signed it; one signed by none is refused', async () => {
  const [oldKey, newKey, stranger] = await Promise.all([rsaKey(), rsaKey(), rsaKey()]);
  let fetches = 0;
  const server = createServer((_req, res) => {
    fetches++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [oldKey.jwk, newKey.jwk] }));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const config: OAuthConfig = {
    issuer: ISSUER,
    jwksUri: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`,
    audience: AUDIENCE,
    clockSkewSeconds: 30,
    jwksMaxAgeSeconds: 600,
    jwksMinRefreshSeconds: 60,
    requireAccessTokenType: false,
  };
  const v = new TokenVerifier(config, createLogger('error', () => {}));
  verifiers.push(v);

  const byOld = await v.verify(await signed(oldKey.privateKey, 'signed-by-old'));
  assert.ok(byOld.ok, JSON.stringify(byOld));
  assert.equal(byOld.principal.subject, 'signed-by-old');
  const byNew = await v.verify(await signed(newKey.privateKey, 'signed-by-new'));
  assert.ok(byNew.ok, JSON.stringify(byNew));
  assert.equal(byNew.principal.subject, 'signed-by-new');

  const forged = await v.verify(await signed(stranger.privateKey, 'mallory'));
  assert.equal(forged.ok, false);
  if (!forged.ok) assert.deepEqual(forged.failure.kind === 'invalid_token' ? forged.failure.reason : forged.failure.kind, 'bad_signature');
  assert.equal(fetches, 1, 'the key set was fetched once: every fitting key was already known');
});
