// The edge's auth stage without a network: how the Authorization header, the query string and the body
// are judged (2026-07-28/basic/authorization/index.mdx §Token Requirements, §Error Handling).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Authenticator, type AuthVerdict } from '../../../src/auth/authenticator.js';
import { credentialInMessage } from '../../../src/auth/credential-locations.js';
import { hashKey } from '../../../src/auth/key-hash.js';
import { validateConfigObject } from '../../../src/config/load.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';
import { createLogger } from '../../../src/log/logger.js';
import { startAuthServer } from '../../helpers/auth-server.js';

const KEY = 'gh_unit_test_key_0123456789abcdefghijklmnop';
const log = createLogger('error', () => {});
const authWith = (auth: Record<string, unknown>) => new Authenticator(validateConfigObject({ upstreams: [{ name: 'u', url: 'http://127.0.0.1:1/mcp' }], auth }, 'test'), log);
const sync = (v: AuthVerdict | Promise<AuthVerdict>): AuthVerdict => {
  assert.ok(!(v instanceof Promise), 'API keys and missing credentials are judged without a tick');
  return v;
};

describe('Authenticator', () => {
  it('anonymous-only (loopback demo): a presented header is neither judged nor needed', () => {
    const a = authWith({ anonymous: true });
    const v = sync(a.authenticate({ authorization: 'Bearer whatever' }));
    assert.ok(v.ok && v.principal.via === 'anonymous');
  });

  it('anonymous next to keys: no header is anonymous, but a bad key is still refused', () => {
    const a = authWith({ anonymous: true, apiKeys: [{ id: 'k', hash: hashKey(KEY) }] });
    const none = sync(a.authenticate({}));
    assert.ok(none.ok && none.principal.subject === 'anonymous');
    const bad = sync(a.authenticate({ authorization: 'Bearer gh_wrong_key_0123456789abcdefghijklmn' }));
    assert.ok(!bad.ok && bad.refusal.status === 401 && bad.refusal.code === 'unknown_key');
    const good = sync(a.authenticate({ authorization: `bearer ${KEY}` }));
    assert.ok(good.ok && good.principal.subject === 'key:k' && good.principal.keyId === 'k', 'the scheme is case-insensitive');
  });

  it('anonymous next to keys with requiredScopes: no header is 401 (authenticate), not 403; a key short of scopes is 403', () => {
    // RFC 6750 §3.1; 2026-07-28 authorization §Error Handling. The anonymous identity holds no scopes.
    const a = authWith({ anonymous: true, requiredScopes: ['mcp:tools'], apiKeys: [{ id: 'k', hash: hashKey(KEY), scopes: [] }] });
    const none = sync(a.authenticate({}));
    assert.ok(!none.ok);
    assert.equal(none.refusal.status, 401);
    assert.equal(none.refusal.code, 'missing_credentials');
    assert.equal(none.refusal.rejectedCredential, false, 'no credential was sent: not a failed attempt');
    assert.equal(none.refusal.headers['www-authenticate'], 'Bearer realm="gatehouse", scope="mcp:tools"');
    const bare = sync(a.authenticate({ authorization: `Bearer ${KEY}` }));
    assert.ok(!bare.ok && bare.refusal.status === 403 && bare.refusal.code === 'insufficient_scope');
    // The admin API's own check ignores the endpoint's scopes: anonymous stays what it was there.
    const admin = sync(a.verifyCredential({}));
    assert.ok(admin.ok && admin.principal.via === 'anonymous');
  });

  it('anonymous-only with requiredScopes: nothing could verify a credential, so no 401 sends the client to get one', () => {
    const a = authWith({ anonymous: true, requiredScopes: ['mcp:tools'] });
    const none = sync(a.authenticate({}));
    assert.ok(!none.ok && none.refusal.status === 403 && none.refusal.code === 'insufficient_scope');
  });

  it('without OAuth there is no metadata to point at, but the challenge is still a Bearer challenge', () => {
    const a = authWith({ apiKeys: [{ id: 'k', hash: hashKey(KEY) }] });
    assert.equal(a.metadata, undefined);
    const v = sync(a.authenticate({}));
    assert.ok(!v.ok);
    assert.equal(v.refusal.headers['www-authenticate'], 'Bearer realm="gatehouse"');
  });

  it('credentials in the query string are named and refused', () => {
    const a = authWith({ apiKeys: [{ id: 'k', hash: hashKey(KEY) }] });
    const v = a.checkUrl('/mcp?x=1&Access-Token=abc');
    assert.ok(v && !v.ok && v.refusal.status === 400 && /Access-Token/.test(v.refusal.message));
    assert.equal(a.checkUrl('/mcp?cursor=abc'), undefined);
  });
});

describe('a value shaped like an API key is never sent to the issuer', async () => {
  // A mistyped or revoked API key is still a secret: introspection would hand it to the authorization
  // server, a third party. The issuer here is real and counts what reaches it.
  const as = await startAuthServer();
  after(() => as.close());
  const audience = 'https://gw.test/mcp';
  const a = authWith({
    apiKeys: [{ id: 'k', hash: hashKey(KEY), scopes: [] }],
    oauth: { issuer: as.issuer, jwksUri: as.jwksUri, audience, introspection: { url: `${as.issuer}/introspect`, clientId: 'gw', clientSecret: 'gw-secret' } },
  });
  after(() => a.close());
  const exp = Math.floor(Date.now() / 1000) + 300;
  as.introspection.set('opaque-live-token', { active: true, sub: 'alice', aud: audience, iss: as.issuer, exp });

  it('an unknown gh_ value is refused as an invalid API key without an introspection request', async () => {
    for (const wrong of ['gh_wrong_key_0123456789abcdefghijklmn', `${KEY}x`, 'gh_a.b.c']) {
      const v = await a.authenticate({ authorization: `Bearer ${wrong}` });
      assert.ok(!v.ok && v.refusal.status === 401 && v.refusal.code === 'unknown_key', `${wrong}: ${JSON.stringify(v)}`);
    }
    assert.equal(as.hits.get('/introspect') ?? 0, 0, 'no API-key-shaped value reached the introspection endpoint');
    assert.equal(as.hits.get('/jwks') ?? 0, 0, 'nor was it tried as a JWT');
  });

  it('the known key and opaque tokens still work, the latter through introspection', async () => {
    const key = sync(a.authenticate({ authorization: `Bearer ${KEY}` }));
    assert.ok(key.ok && key.principal.keyId === 'k');
    const opaque = await a.authenticate({ authorization: 'Bearer opaque-live-token' });
    assert.ok(opaque.ok && opaque.principal.subject === 'alice' && opaque.principal.via === 'introspection', JSON.stringify(opaque));
    assert.equal(as.hits.get('/introspect'), 1);
  });
});

describe('an API key of a custom shape (hash-key accepts any long key) is kept from the issuer by its declared prefix', async () => {
  // Config holds only keys' hashes, so Gatehouse cannot tell a mistyped custom key from an opaque token by
  // itself: auth.apiKeyPrefixes declares what our keys start with. A value so shaped that is no configured key
  // is refused 401 invalid_token (unknown_key) as a wrong gh_ key is, never sent to introspection (RFC 7662
  // §4: the introspection endpoint is told the token) nor tried as a JWT.
  const CUSTOM = 'acme_live_0123456789abcdefghijklmnopqrstuv';
  const as = await startAuthServer();
  after(() => as.close());
  const audience = 'https://gw.test/mcp';
  const oauth = { issuer: as.issuer, jwksUri: as.jwksUri, audience, introspection: { url: `${as.issuer}/introspect`, clientId: 'gw', clientSecret: 'gw-secret' } };
  const exp = Math.floor(Date.now() / 1000) + 300;
  as.introspection.set('opaque-live-token', { active: true, sub: 'alice', aud: audience, iss: as.issuer, exp });
  const introspected = () => as.hits.get('/introspect') ?? 0;

  it('a mistyped key with a declared prefix gets 401 unknown_key, and nothing reaches the issuer', async () => {
    const a = authWith({ apiKeys: [{ id: 'acme', hash: hashKey(CUSTOM) }], apiKeyPrefixes: ['acme_live_', 'acme_test_'], oauth });
    after(() => a.close());
    const before = introspected();
    for (const wrong of [`${CUSTOM.slice(0, -1)}w`, 'acme_test_0123456789abcdefghijklmnopqrstuv', 'gh_wrong_key_0123456789abcdefghijklmn']) {
      const v = await a.authenticate({ authorization: `Bearer ${wrong}` });
      assert.ok(!v.ok && v.refusal.status === 401 && v.refusal.code === 'unknown_key', `${wrong}: ${JSON.stringify(v)}`);
      assert.match(v.refusal.headers['www-authenticate']!, /error="invalid_token"/);
    }
    assert.equal(introspected(), before, 'no value shaped like one of our keys reached the introspection endpoint');
    const key = sync(a.authenticate({ authorization: `Bearer ${CUSTOM}` }));
    assert.ok(key.ok && key.principal.keyId === 'acme');
    const opaque = await a.authenticate({ authorization: 'Bearer opaque-live-token' });
    assert.ok(opaque.ok && opaque.principal.via === 'introspection', 'other opaque tokens are still introspected');
    assert.equal(introspected(), before + 1);
  });

  it('without the prefix declared, a mistyped custom key cannot be told from an opaque token: it is introspected (as documented)', async () => {
    const a = authWith({ apiKeys: [{ id: 'acme', hash: hashKey(CUSTOM) }], oauth });
    after(() => a.close());
    const before = introspected();
    const v = await a.authenticate({ authorization: `Bearer ${CUSTOM.slice(0, -1)}w` });
    assert.ok(!v.ok && v.refusal.status === 401, JSON.stringify(v));
    assert.equal(introspected(), before + 1);
  });

  it('a prefix that every JWT (eyJ…) would match is refused at load', () => {
    for (const prefix of ['e', 'ey', 'eyJ', 'eyJhb']) {
      const config = validateConfigObject({ upstreams: [{ name: 'u', url: 'http://127.0.0.1:1/mcp' }], listen: { publicUrl: audience }, auth: { apiKeys: [{ id: 'acme', hash: hashKey(CUSTOM) }], apiKeyPrefixes: [prefix], oauth } }, 'test');
      assert.ok(unsupportedFeatures(config).some((p) => p.startsWith('auth.apiKeyPrefixes[0]') && p.includes('JWT')), prefix);
    }
  });
});

describe('credentialInMessage', () => {
  it('finds credentials at the top, in params and in _meta, but not in tool arguments', () => {
    assert.equal(credentialInMessage({ jsonrpc: '2.0', id: 1, method: 'x', api_key: 'k' }), 'api_key');
    assert.equal(credentialInMessage({ jsonrpc: '2.0', id: 1, method: 'x', params: { accessToken: 'k' } }), 'params.accessToken');
    assert.equal(credentialInMessage({ jsonrpc: '2.0', id: 1, method: 'x', params: { _meta: { 'com.example/authorization': 'Bearer k' } } }), 'params._meta.com.example/authorization');
    assert.equal(credentialInMessage({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'login', arguments: { token: 'user-supplied' } } }), undefined);
    assert.equal(credentialInMessage({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { _meta: { progressToken: 3 } } }), undefined);
  });
});
