// JWT access-token validation at the edge (2026-07-28/basic/authorization §Token Handling: validate per
// OAuth 2.1 §5.2, audience bound per RFC 8707; invalid or expired ⇒ 401). The key set is served for real
// over HTTP so fetch counts, rotation and outages are exercised end to end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import type { OAuthConfig } from '../../../src/config/types.js';
import { createLogger } from '../../../src/log/logger.js';
import type { AuthResult } from '../../../src/auth/auth-result.js';
import type { Principal } from '../../../src/pipeline/principal.js';
import { TokenVerifier } from '../../../src/auth/token-verifier.js';
import { closedAfterTests } from '../../helpers/cleanup.js';

const AUDIENCE = 'https://gateway.test/mcp';
const ISSUER = 'https://issuer.test';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const nowSec = (): number => Math.floor(Date.now() / 1000);
const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');

// Every log line any verifier writes; checked at the end for token text.
const logLines: string[] = [];
const issuedTokens: string[] = [];
const log = createLogger('debug', (l) => logLines.push(l));

interface KeyServer {
  base: string;
  keys: JWK[];
  /** Requests per path. */
  hits: Map<string, number>;
  status: number;
  metadata: Map<string, Record<string, unknown>>;
  server: Server;
}

const { servers, verifiers } = closedAfterTests<TokenVerifier>();

async function startKeyServer(): Promise<KeyServer> {
  const ks: KeyServer = { base: '', keys: [], hits: new Map(), status: 200, metadata: new Map(), server: createServer() };
  ks.server.on('request', (req, res) => {
    const path = req.url ?? '';
    ks.hits.set(path, (ks.hits.get(path) ?? 0) + 1);
    const meta = ks.metadata.get(path);
    if (ks.status !== 200) res.writeHead(ks.status).end('{}');
    else if (path === '/jwks') res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: ks.keys }));
    else if (meta) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(meta));
    else res.writeHead(404).end();
  });
  servers.push(ks.server);
  await new Promise<void>((r) => ks.server.listen(0, '127.0.0.1', () => r()));
  ks.base = `http://127.0.0.1:${(ks.server.address() as AddressInfo).port}`;
  return ks;
}

const jwksFetches = (ks: KeyServer): number => ks.hits.get('/jwks') ?? 0;

interface Signer {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  publicKey: CryptoKey;
}

async function makeSigner(alg: string, kid: string, publishAlg = true): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  const jwk = await exportJWK(publicKey);
  return { kid, alg, privateKey, publicKey, publicJwk: { ...jwk, kid, use: 'sig', ...(publishAlg ? { alg } : {}) } };
}

async function sign(signer: Signer, claims: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
  const jwt = new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: 'user-1', exp: nowSec() + 300, iat: nowSec(), ...claims })
    .setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: 'at+jwt', ...header });
  const token = await jwt.sign(signer.privateKey);
  issuedTokens.push(token);
  return token;
}

function config(ks: KeyServer, over: Partial<OAuthConfig> = {}): OAuthConfig {
  return {
    issuer: ISSUER,
    jwksUri: `${ks.base}/jwks`,
    audience: AUDIENCE,
    tenantClaim: 'org',
    groupsClaim: 'groups',
    clockSkewSeconds: 30,
    jwksMaxAgeSeconds: 600,
    jwksMinRefreshSeconds: 60,
    requireAccessTokenType: false,
    ...over,
  };
}

function verifier(c: OAuthConfig): TokenVerifier {
  const v = new TokenVerifier(c, log);
  verifiers.push(v);
  return v;
}

function principal(r: AuthResult): Principal {
  assert.ok(r.ok, `expected a principal, got ${JSON.stringify(r)}`);
  return r.principal;
}

function refusal(r: AuthResult, reason: string): void {
  assert.equal(r.ok, false, 'expected a refusal');
  if (r.ok) return;
  assert.equal(r.failure.kind, 'invalid_token', JSON.stringify(r.failure));
  if (r.failure.kind === 'invalid_token') {
    assert.equal(r.failure.reason, reason, r.failure.message);
    assert.ok(r.failure.message.length > 0 && r.failure.message.length < 100);
  }
}

// One key server and verifier shared by the plain validation tests.
const ks = await startKeyServer();
const rsa = await makeSigner('RS256', 'rsa-1');
const ec = await makeSigner('ES256', 'ec-1');
const ed = await makeSigner('EdDSA', 'ed-1', false);
// Published without "alg": the key must still be usable for each accepted RSA algorithm.
const rsaNoAlg = await makeSigner('PS256', 'rsa-noalg', false);
ks.keys.push(rsa.publicJwk, ec.publicJwk, ed.publicJwk, rsaNoAlg.publicJwk);
// Keys that must be skipped: an encryption key and a MAC secret.
ks.keys.push({ ...(await makeSigner('RS256', 'enc-1')).publicJwk, use: 'enc' }, { kty: 'oct', kid: 'hmac-1', k: 'c2VjcmV0', alg: 'HS256' });
const v = verifier(config(ks));

test('valid RS256 token: principal from sub, scope, tenant and groups claims', async () => {
  const exp = nowSec() + 300;
  const token = await sign(rsa, { scope: 'tools:read tools:call', org: 'acme', groups: ['admins', 'ops', 7], jti: 'tok-1', exp });
  const p = principal(await v.verify(token));
  assert.equal(p.subject, 'user-1');
  assert.deepEqual(p.scopes, ['tools:read', 'tools:call']);
  assert.equal(p.tenant, 'acme');
  assert.deepEqual(p.groups, ['admins', 'ops']);
  assert.equal(p.via, 'jwt');
  assert.equal(p.tokenId, 'tok-1');
  // Accepted until exp + clockSkewSeconds (30 here); a stream it opens is served until then, not beyond.
  assert.equal(p.expiresAt, (exp + 30) * 1000);
});

test('valid ES256 token: scopes from scp, groups as a space-separated string', async () => {
  const p = principal(await v.verify(await sign(ec, { scp: ['a', 'b'], groups: 'g1 g2', aud: ['https://other.test', AUDIENCE] })));
  assert.deepEqual(p.scopes, ['a', 'b']);
  assert.deepEqual(p.groups, ['g1', 'g2']);
  assert.equal(p.tenant, undefined);
  assert.equal(p.tokenId, undefined);
});

test('valid EdDSA token, and an RSA key published without alg verifies PS256', async () => {
  assert.equal(principal(await v.verify(await sign(ed, { sub: 'ed-user' }))).subject, 'ed-user');
  assert.equal(principal(await v.verify(await sign(rsaNoAlg, { sub: 'ps-user' }))).subject, 'ps-user');
});

test('alg none is refused', async () => {
  const token = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ iss: ISSUER, aud: AUDIENCE, sub: 'x', exp: nowSec() + 300 })}.`;
  refusal(await v.verify(token), 'alg_not_allowed');
  const noneWithKid = `${b64({ alg: 'none', kid: rsa.kid })}.${b64({ iss: ISSUER, aud: AUDIENCE, sub: 'x', exp: nowSec() + 300 })}.`;
  refusal(await v.verify(noneWithKid), 'alg_not_allowed');
});

test('HS256 signed with the RSA public key bytes is refused before any key lookup', async () => {
  const before = jwksFetches(ks);
  const payload = b64({ iss: ISSUER, aud: AUDIENCE, sub: 'attacker', exp: nowSec() + 300 });
  for (const secret of [await exportSPKI(rsa.publicKey), JSON.stringify(rsa.publicJwk), Buffer.from(rsa.publicJwk.n ?? '', 'base64url')]) {
    const input = `${b64({ alg: 'HS256', kid: rsa.kid, typ: 'JWT' })}.${payload}`;
    const token = `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
    issuedTokens.push(token);
    refusal(await v.verify(token), 'alg_not_allowed');
  }
  // Even the published MAC secret cannot be used: the HMAC family is never accepted.
  const input = `${b64({ alg: 'HS256', kid: 'hmac-1' })}.${payload}`;
  refusal(await v.verify(`${input}.${createHmac('sha256', 'secret').update(input).digest('base64url')}`), 'alg_not_allowed');
  assert.equal(jwksFetches(ks), before);
});

test('an algorithm outside the configured list is refused; HS* and none in config are ignored', async () => {
  // The schema refuses these values; the verifier must not rely on that, so the test passes them anyway.
  const rsOnly = verifier(config(ks, { algorithms: ['RS256', 'HS256', 'none'] as unknown as ['RS256'] }));
  refusal(await rsOnly.verify(await sign(ec, {})), 'alg_not_allowed');
  refusal(await rsOnly.verify(await sign(rsaNoAlg, {})), 'alg_not_allowed');
  principal(await rsOnly.verify(await sign(rsa, {})));
  assert.throws(() => new TokenVerifier(config(ks, { algorithms: ['HS256'] as unknown as ['RS256'] }), log), /asymmetric/);
});

test('issuer and audience are enforced (RFC 8707)', async () => {
  refusal(await v.verify(await sign(rsa, { iss: 'https://evil.test' })), 'wrong_issuer');
  refusal(await v.verify(await sign(rsa, { iss: `${ISSUER}/` })), 'wrong_issuer');
  refusal(await v.verify(await sign(rsa, { aud: 'https://other.test/mcp' })), 'wrong_audience');
  refusal(await v.verify(await sign(rsa, { aud: ['https://a.test', 'https://b.test'] })), 'wrong_audience');
  refusal(await v.verify(await sign(rsa, { aud: undefined })), 'missing_claim');
});

test('required claims: exp and sub', async () => {
  refusal(await v.verify(await sign(rsa, { exp: undefined })), 'missing_claim');
  refusal(await v.verify(await sign(rsa, { sub: undefined })), 'missing_claim');
  refusal(await v.verify(await sign(rsa, { sub: '' })), 'missing_claim');
  refusal(await v.verify(await sign(rsa, { exp: 'tomorrow' } as unknown as JWTPayload)), 'malformed');
});

test('time claims: expired, not yet valid, issued in the future; skew tolerated', async () => {
  refusal(await v.verify(await sign(rsa, { exp: nowSec() - 120 })), 'expired');
  refusal(await v.verify(await sign(rsa, { nbf: nowSec() + 120 })), 'not_yet_valid');
  refusal(await v.verify(await sign(rsa, { iat: nowSec() + 120 })), 'not_yet_valid');
  // Within the 30 s clock skew.
  principal(await v.verify(await sign(rsa, { exp: nowSec() - 10 })));
  principal(await v.verify(await sign(rsa, { nbf: nowSec() + 10, iat: nowSec() + 10 })));
});

test('tampered payload keeps a valid-looking signature but is refused', async () => {
  const token = await sign(rsa, { sub: 'user-1', scope: 'read' });
  const [h, , s] = token.split('.');
  const forged = `${h}.${b64({ iss: ISSUER, aud: AUDIENCE, sub: 'admin', scope: 'read write', exp: nowSec() + 300 })}.${s}`;
  issuedTokens.push(forged);
  refusal(await v.verify(forged), 'bad_signature');
  // A token whose header names another published key of the same type fails the signature too.
  const swapped = `${b64({ alg: 'PS256', kid: rsaNoAlg.kid })}.${token.split('.')[1]}.${s}`;
  refusal(await v.verify(swapped), 'bad_signature');
});

test('garbage and opaque tokens without introspection are malformed', async () => {
  for (const t of ['abc', 'a.b.c', `${b64({ alg: 'RS256', kid: 'rsa-1' })}.###.x`, `${b64({ alg: 'RS256' })}.${b64('x')}`, 'x'.repeat(20_000), '']) {
    refusal(await v.verify(t), 'malformed');
  }
  refusal(await v.verify(`${b64({ alg: 'RS256', kid: 'rsa-1' })}.${b64([1, 2])}.AAAA`), 'bad_signature');
});

test('unknown kid is refused, and a flood of forged kids costs at most one key-set fetch per interval', async () => {
  const fks = await startKeyServer();
  const good = await makeSigner('RS256', 'good');
  fks.keys.push(good.publicJwk);
  const attacker = await makeSigner('RS256', 'unused');
  const forged = await Promise.all(Array.from({ length: 50 }, (_, i) => sign({ ...attacker, kid: `forged-${i}` }, {})));
  const fv = verifier(config(fks, { jwksMinRefreshSeconds: 1 }));
  principal(await fv.verify(await sign(good, {})));
  assert.equal(jwksFetches(fks), 1);
  // Inside the interval: no fetch at all.
  for (const r of await Promise.all(forged.map((t) => fv.verify(t)))) refusal(r, 'unknown_kid');
  assert.equal(jwksFetches(fks), 1);
  // After it: one fetch shared by every concurrent lookup.
  await sleep(1100);
  for (const r of await Promise.all(forged.map((t) => fv.verify(t)))) refusal(r, 'unknown_kid');
  assert.equal(jwksFetches(fks), 2);
  for (const t of forged) refusal(await fv.verify(t), 'unknown_kid');
  assert.equal(jwksFetches(fks), 2);
});

test('concurrent first lookups share one fetch', async () => {
  const cks = await startKeyServer();
  const k = await makeSigner('ES256', 'k');
  cks.keys.push(k.publicJwk);
  const cv = verifier(config(cks));
  const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) => sign(k, { sub: `u${i}` })));
  const results = await Promise.all(tokens.map((t) => cv.verify(t)));
  results.forEach((r, i) => assert.equal(principal(r).subject, `u${i}`));
  assert.equal(jwksFetches(cks), 1);
});

test('key rotation: a key published after start is found once the refresh interval has passed', async () => {
  const rks = await startKeyServer();
  const oldKey = await makeSigner('RS256', 'old');
  rks.keys.push(oldKey.publicJwk);
  const rv = verifier(config(rks, { jwksMinRefreshSeconds: 1 }));
  principal(await rv.verify(await sign(oldKey, {})));
  const newKey = await makeSigner('ES256', 'new');
  rks.keys.push(newKey.publicJwk);
  const token = await sign(newKey, { sub: 'rotated' });
  // Inside the interval the new kid is unknown and nothing is fetched.
  let result = await rv.verify(token);
  refusal(result, 'unknown_kid');
  assert.equal(jwksFetches(rks), 1);
  let attempts = 0;
  while (!result.ok && attempts < 20) {
    await sleep(200);
    result = await rv.verify(token);
    attempts++;
  }
  assert.equal(principal(result).subject, 'rotated');
  assert.ok(jwksFetches(rks) <= 3, `fetches: ${jwksFetches(rks)}`);
});

test('key set unreachable or failing: unavailable, not invalid_token; recovers after the interval', async () => {
  const dks = await startKeyServer();
  const k = await makeSigner('RS256', 'k');
  dks.keys.push(k.publicJwk);
  dks.status = 503;
  const dv = verifier(config(dks, { jwksMinRefreshSeconds: 1 }));
  const token = await sign(k, {});
  const r = await dv.verify(token);
  assert.equal(r.ok, false);
  if (!r.ok) assert.equal(r.failure.kind, 'unavailable');
  // An outage does not cause a fetch per request.
  for (let i = 0; i < 10; i++) assert.equal((await dv.verify(token)).ok, false);
  assert.equal(jwksFetches(dks), 1);
  dks.status = 200;
  await sleep(1100);
  principal(await dv.verify(token));

  // Nothing listening at all.
  const closed = await startKeyServer();
  const deadUri = `${closed.base}/jwks`;
  closed.server.closeAllConnections();
  await new Promise<void>((res) => closed.server.close(() => res()));
  const gone = verifier({ ...config(dks), jwksUri: deadUri });
  const r2 = await gone.verify(token);
  assert.deepEqual(r2.ok ? undefined : r2.failure.kind, 'unavailable');
});

test('jwksUri discovered from the issuer metadata (RFC 8414 path insertion)', async () => {
  const mks = await startKeyServer();
  const issuer = `${mks.base}/tenant-a`;
  const k = await makeSigner('RS256', 'k');
  mks.keys.push(k.publicJwk);
  mks.metadata.set('/.well-known/oauth-authorization-server/tenant-a', { issuer, jwks_uri: `${mks.base}/jwks` });
  const mv = verifier({ ...config(mks, { issuer }), jwksUri: undefined });
  principal(await mv.verify(await sign(k, { iss: issuer })));

  // Metadata naming another issuer is not used (mix-up defence); OIDC discovery is the fallback.
  const oks = await startKeyServer();
  oks.keys.push(k.publicJwk);
  oks.metadata.set('/.well-known/oauth-authorization-server', { issuer: 'https://evil.test', jwks_uri: 'http://127.0.0.1:1/jwks' });
  oks.metadata.set('/.well-known/openid-configuration', { issuer: oks.base, jwks_uri: `${oks.base}/jwks` });
  const ov = verifier({ ...config(oks, { issuer: oks.base }), jwksUri: undefined });
  principal(await ov.verify(await sign(k, { iss: oks.base })));
});

test('two published keys with one kid: a token signed by either verifies, one signed by neither does not', async () => {
  // Issuers do publish a kid twice (a key re-issued under its old name during rotation, an RSA and an EC key
  // sharing a name). Keeping only the later key refused every token signed by the earlier one.
  const dks = await startKeyServer();
  const first = await makeSigner('RS256', 'shared');
  const second = await makeSigner('RS256', 'shared');
  const ecShared = await makeSigner('ES256', 'shared');
  const stranger = await makeSigner('RS256', 'shared');
  dks.keys.push(first.publicJwk, second.publicJwk, ecShared.publicJwk);
  const dv = verifier(config(dks));
  assert.equal(principal(await dv.verify(await sign(first, { sub: 'by-first' }))).subject, 'by-first');
  assert.equal(principal(await dv.verify(await sign(second, { sub: 'by-second' }))).subject, 'by-second');
  assert.equal(principal(await dv.verify(await sign(ecShared, { sub: 'by-ec' }))).subject, 'by-ec');
  refusal(await dv.verify(await sign(stranger, { sub: 'forged' })), 'bad_signature');
  // A claim failure is the token's, whichever key verified it.
  refusal(await dv.verify(await sign(first, { aud: 'https://other.test' })), 'wrong_audience');
  assert.equal(jwksFetches(dks), 1, 'a signature that fits no key with the kid is not an unknown kid: no refetch');
  assert.ok(logLines.some((l) => l.includes('"shared"') && /kid/.test(l) && /more than once/.test(l)), 'the duplicate kid is logged');
});

test('no log line carries token text', () => {
  assert.ok(logLines.length > 0);
  for (const token of issuedTokens) {
    const signature = token.split('.')[2] ?? token;
    for (const line of logLines) assert.ok(!line.includes(token) && (signature.length < 10 || !line.includes(signature)), 'token leaked into logs');
  }
});
