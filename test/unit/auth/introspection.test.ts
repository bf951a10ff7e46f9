// Opaque access tokens judged by RFC 7662 introspection, with HTTP Basic client authentication
// (RFC 6749 §2.3.1) and a cache that never outlives the token. The endpoint is a real HTTP server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthConfig } from '../../../src/config/types.js';
import { createLogger } from '../../../src/log/logger.js';
import type { AuthResult } from '../../../src/auth/auth-result.js';
import type { Principal } from '../../../src/pipeline/principal.js';
import { TokenVerifier } from '../../../src/auth/token-verifier.js';
import { closedAfterTests } from '../../helpers/cleanup.js';

const AUDIENCE = 'https://gateway.test/mcp';
const ISSUER = 'https://issuer.test';
const CLIENT_ID = 'gatehouse gw';
const CLIENT_SECRET = 's3cr:et+/=&%';
const nowSec = (): number => Math.floor(Date.now() / 1000);

const logLines: string[] = [];
const log = createLogger('debug', (l) => logLines.push(l));

interface Seen {
  headers: IncomingHttpHeaders;
  method: string;
  body: string;
}

interface AuthServer {
  url: string;
  /** What the server answers per token. */
  answers: Map<string, Record<string, unknown>>;
  seen: Seen[];
  status: number;
  /** Milliseconds to wait before answering. */
  delayMs: number;
  server: Server;
}

const { servers, verifiers } = closedAfterTests<TokenVerifier>();

async function startAuthServer(): Promise<AuthServer> {
  const as: AuthServer = { url: '', answers: new Map(), seen: [], status: 200, delayMs: 0, server: createServer() };
  as.server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      as.seen.push({ headers: req.headers, method: req.method ?? '', body });
      const token = new URLSearchParams(body).get('token') ?? '';
      const reply = (): void => {
        if (as.status !== 200) res.writeHead(as.status).end('{"error":"server_error"}');
        else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(as.answers.get(token) ?? { active: false }));
      };
      if (as.delayMs > 0) setTimeout(reply, as.delayMs);
      else reply();
    });
  });
  servers.push(as.server);
  await new Promise<void>((r) => as.server.listen(0, '127.0.0.1', () => r()));
  as.url = `http://127.0.0.1:${(as.server.address() as AddressInfo).port}/introspect`;
  return as;
}

function verifier(url: string, over: Partial<OAuthConfig> = {}, cacheMaxSeconds = 60): TokenVerifier {
  const v = new TokenVerifier(
    {
      issuer: ISSUER,
      // Never reached: opaque tokens do not touch the key set.
      jwksUri: 'http://127.0.0.1:1/jwks',
      audience: AUDIENCE,
      tenantClaim: 'tenant',
      groupsClaim: 'groups',
      clockSkewSeconds: 0,
      jwksMaxAgeSeconds: 600,
      jwksMinRefreshSeconds: 30,
      requireAccessTokenType: false,
      introspection: { url, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, cacheMaxSeconds, acceptMissingAudience: false },
      ...over,
    },
    log,
  );
  verifiers.push(v);
  return v;
}

function principal(r: AuthResult): Principal {
  assert.ok(r.ok, `expected a principal, got ${JSON.stringify(r)}`);
  return r.principal;
}

function failure(r: AuthResult): { kind: string; reason?: string } {
  assert.equal(r.ok, false, 'expected a refusal');
  if (r.ok) throw new Error('unreachable');
  return r.failure.kind === 'invalid_token' ? { kind: r.failure.kind, reason: r.failure.reason } : { kind: r.failure.kind };
}

const as = await startAuthServer();
const v = verifier(as.url);

test('active token: principal from the answer; Basic client auth and a form body are sent', async () => {
  const exp = nowSec() + 600;
  as.answers.set('opaque-active-1', {
    active: true,
    sub: 'alice',
    scope: 'tools:read tools:call',
    exp,
    iss: ISSUER,
    aud: [AUDIENCE, 'https://other.test'],
    client_id: 'app-1',
    jti: 'j-1',
    tenant: 'acme',
    groups: ['ops'],
  });
  const before = as.seen.length;
  const p = principal(await v.verify('opaque-active-1'));
  assert.deepEqual(p, { subject: 'alice', tenant: 'acme', scopes: ['tools:read', 'tools:call'], groups: ['ops'], via: 'introspection', tokenId: 'j-1', expiresAt: exp * 1000 });
  assert.equal(as.seen.length, before + 1);
  const req = as.seen.at(-1);
  assert.ok(req);
  assert.equal(req.method, 'POST');
  assert.match(req.headers['content-type'] ?? '', /^application\/x-www-form-urlencoded/);
  const form = new URLSearchParams(req.body);
  assert.equal(form.get('token'), 'opaque-active-1');
  assert.equal(form.get('token_type_hint'), 'access_token');
  // RFC 6749 §2.3.1: form-encode id and secret, join with ':', base64.
  const auth = req.headers.authorization ?? '';
  assert.match(auth, /^Basic [A-Za-z0-9+/]+=*$/);
  const decoded = Buffer.from(auth.slice('Basic '.length), 'base64').toString('utf8');
  const [id, secret] = decoded.split(':').map((part) => new URLSearchParams(`v=${part}`).get('v'));
  assert.equal(id, CLIENT_ID);
  assert.equal(secret, CLIENT_SECRET);
  assert.equal(decoded, 'gatehouse+gw:s3cr%3Aet%2B%2F%3D%26%25');
});

test('answers are cached: a second verify makes no request', async () => {
  as.answers.set('opaque-cached', { active: true, sub: 'bob', aud: AUDIENCE, exp: nowSec() + 600 });
  const before = as.seen.length;
  assert.equal(principal(await v.verify('opaque-cached')).subject, 'bob');
  assert.equal(principal(await v.verify('opaque-cached')).subject, 'bob');
  assert.equal(as.seen.length, before + 1);
});

test('concurrent verifies of one token share one request', async () => {
  as.answers.set('opaque-concurrent', { active: true, sub: 'carol', aud: AUDIENCE, exp: nowSec() + 600 });
  as.delayMs = 100;
  const before = as.seen.length;
  try {
    const results = await Promise.all(Array.from({ length: 10 }, () => v.verify('opaque-concurrent')));
    for (const r of results) assert.equal(principal(r).subject, 'carol');
  } finally {
    as.delayMs = 0;
  }
  assert.equal(as.seen.length, before + 1);
});

test('inactive token: invalid_token inactive, and the refusal is cached briefly', async () => {
  const before = as.seen.length;
  assert.deepEqual(failure(await v.verify('opaque-unknown')), { kind: 'invalid_token', reason: 'inactive' });
  assert.deepEqual(failure(await v.verify('opaque-unknown')), { kind: 'invalid_token', reason: 'inactive' });
  assert.equal(as.seen.length, before + 1);
  as.answers.set('opaque-active-false', { active: 'true', sub: 'x' });
  assert.deepEqual(failure(await v.verify('opaque-active-false')), { kind: 'invalid_token', reason: 'inactive' });
});

test('a cached answer never outlives the token expiry', async (t) => {
  // The wall clock is moved, not waited for: the token is valid for as long as the two verifies below take,
  // however slow, and expired once the clock is moved past its exp. (The cache's own LRU ages entries on
  // the monotonic clock, which is not moved: what ends the entry is its bound by the token's exp.)
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const exp = nowSec() + 2;
  as.answers.set('opaque-short', { active: true, sub: 'dave', aud: AUDIENCE, exp });
  const before = as.seen.length;
  principal(await v.verify('opaque-short'));
  principal(await v.verify('opaque-short'));
  assert.equal(as.seen.length, before + 1);
  t.mock.timers.tick(exp * 1000 + 50 - Date.now());
  assert.ok(Date.now() > exp * 1000);
  // The server still says active: the gateway asks again and refuses on exp itself.
  assert.deepEqual(failure(await v.verify('opaque-short')), { kind: 'invalid_token', reason: 'expired' });
  assert.equal(as.seen.length, before + 2);
  // A refusal past exp is not cached either.
  as.answers.set('opaque-short', { active: false });
  assert.deepEqual(failure(await v.verify('opaque-short')), { kind: 'invalid_token', reason: 'inactive' });
  assert.equal(as.seen.length, before + 3);
});

test('cacheMaxSeconds 0 disables the cache', async () => {
  const nc = verifier(as.url, {}, 0);
  as.answers.set('opaque-nocache', { active: true, sub: 'erin', aud: AUDIENCE, exp: nowSec() + 600 });
  const before = as.seen.length;
  principal(await nc.verify('opaque-nocache'));
  principal(await nc.verify('opaque-nocache'));
  assert.equal(as.seen.length, before + 2);
});

test('issuer is enforced when present, audience always (an answer without aud is refused unless acceptMissingAudience); sub is required', async () => {
  as.answers.set('opaque-other-aud', { active: true, sub: 'x', aud: 'https://other.test/mcp' });
  as.answers.set('opaque-other-iss', { active: true, sub: 'x', aud: AUDIENCE, iss: 'https://evil.test' });
  as.answers.set('opaque-no-sub', { active: true, aud: AUDIENCE, client_id: 'app' });
  as.answers.set('opaque-not-yet', { active: true, sub: 'x', aud: AUDIENCE, nbf: nowSec() + 120 });
  as.answers.set('opaque-no-aud', { active: true, sub: 'frank' });
  assert.deepEqual(failure(await v.verify('opaque-other-aud')), { kind: 'invalid_token', reason: 'wrong_audience' });
  assert.deepEqual(failure(await v.verify('opaque-other-iss')), { kind: 'invalid_token', reason: 'wrong_issuer' });
  assert.deepEqual(failure(await v.verify('opaque-no-sub')), { kind: 'invalid_token', reason: 'missing_claim' });
  assert.deepEqual(failure(await v.verify('opaque-not-yet')), { kind: 'invalid_token', reason: 'not_yet_valid' });
  // authorization §Token Handling: a token that cannot be shown to be for this resource is refused.
  assert.deepEqual(failure(await v.verify('opaque-no-aud')), { kind: 'invalid_token', reason: 'wrong_audience' });
  const lenient = verifier(as.url, { introspection: { url: as.url, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, cacheMaxSeconds: 60, acceptMissingAudience: true } });
  const p = principal(await lenient.verify('opaque-no-aud'));
  assert.equal(p.subject, 'frank');
  assert.equal(p.expiresAt, undefined);
});

test('endpoint failing or down: unavailable, never cached', async () => {
  const fas = await startAuthServer();
  const fv = verifier(fas.url);
  fas.answers.set('opaque-during-outage', { active: true, sub: 'gina', aud: AUDIENCE, exp: nowSec() + 600 });
  fas.status = 500;
  assert.deepEqual(failure(await fv.verify('opaque-during-outage')), { kind: 'unavailable' });
  fas.status = 200;
  assert.equal(principal(await fv.verify('opaque-during-outage')).subject, 'gina');

  // A malformed answer is the server's fault too.
  fas.answers.set('opaque-bad-exp', { active: true, sub: 'x', exp: 'soon' });
  assert.deepEqual(failure(await fv.verify('opaque-bad-exp')), { kind: 'unavailable' });

  const dead = await startAuthServer();
  dead.server.closeAllConnections();
  await new Promise<void>((r) => dead.server.close(() => r()));
  const dv = verifier(dead.url);
  assert.deepEqual(failure(await dv.verify('opaque-nowhere')), { kind: 'unavailable' });
});

test('no log line carries token text or the client secret', () => {
  assert.ok(logLines.length > 0);
  for (const line of logLines) {
    assert.ok(!/opaque-[a-z]/.test(line), 'token leaked into logs');
    assert.ok(!line.includes(CLIENT_SECRET) && !line.includes('Basic '), 'client secret leaked into logs');
  }
});
