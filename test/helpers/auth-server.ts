// A small OAuth authorization server for tests, served for real on 127.0.0.1: RFC 8414 metadata, a JWKS
// endpoint (keys made with jose, rotatable), and a client-credentials token endpoint that mints JWT
// access tokens for the `resource` asked for (RFC 8707), and an RFC 7662 introspection endpoint at
// /introspect for opaque tokens. Counts every request per path.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export interface TestKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  publicKey: CryptoKey;
}

export interface AuthServer {
  issuer: string;
  jwksUri: string;
  /** Keys published in the JWKS now; push or replace to rotate. */
  published: TestKey[];
  hits: Map<string, number>;
  /** Client id → secret accepted by the token endpoint. */
  clients: Map<string, string>;
  /** Scopes granted to tokens from the token endpoint. */
  grantScope: string;
  /** Opaque token → what POST /introspect answers for it; any other token is `{ active: false }`. */
  introspection: Map<string, Record<string, unknown>>;
  newKey(kid: string, alg?: 'RS256' | 'ES256'): Promise<TestKey>;
  /** A signed access token; defaults: iss = issuer, 5 minutes of life, signed by the first published key. */
  sign(claims: JWTPayload, opts?: { key?: TestKey; alg?: string; kid?: string }): Promise<string>;
  close(): Promise<void>;
}

export async function startAuthServer(): Promise<AuthServer> {
  const hits = new Map<string, number>();
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const as: AuthServer = {
    issuer,
    jwksUri: `${issuer}/jwks`,
    published: [],
    hits,
    clients: new Map(),
    grantScope: 'mcp:tools',
    introspection: new Map(),
    async newKey(kid, alg = 'RS256') {
      const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
      const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
      return { kid, privateKey, publicKey, publicJwk };
    },
    async sign(claims, opts = {}) {
      const key = opts.key ?? as.published[0]!;
      const alg = opts.alg ?? (key.publicJwk.alg as string);
      return new SignJWT(claims)
        .setProtectedHeader({ alg, kid: opts.kid ?? key.kid, typ: 'at+jwt' })
        .setIssuer(typeof claims.iss === 'string' ? claims.iss : issuer)
        .setIssuedAt()
        .setExpirationTime(typeof claims.exp === 'number' ? claims.exp : '5m')
        .sign(key.privateKey);
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
  as.published.push(await as.newKey('key-1'));
  server.on('request', (req, res) => {
    const path = (req.url ?? '').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const json = (status: number, body: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (path === '/jwks') return json(200, { keys: as.published.map((k) => k.publicJwk) });
      if (path === '/.well-known/oauth-authorization-server' || path === '/.well-known/openid-configuration') {
        return json(200, {
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: as.jwksUri,
          grant_types_supported: ['client_credentials'],
          token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
          response_types_supported: ['code'],
          code_challenge_methods_supported: ['S256'],
        });
      }
      if (path === '/introspect' && req.method === 'POST') {
        const token = new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('token') ?? '';
        return json(200, as.introspection.get(token) ?? { active: false });
      }
      if (path === '/token' && req.method === 'POST') {
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        let clientId = form.get('client_id');
        let secret = form.get('client_secret');
        const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
        if (basic) [clientId, secret] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':').map(decodeURIComponent) as [string, string];
        if (form.get('grant_type') !== 'client_credentials' || !clientId || as.clients.get(clientId) !== secret) return json(401, { error: 'invalid_client' });
        const resource = form.get('resource') ?? undefined;
        void as.sign({ sub: `client:${clientId}`, ...(resource ? { aud: resource } : {}), scope: as.grantScope, client_id: clientId }).then((access_token) =>
          json(200, { access_token, token_type: 'Bearer', expires_in: 300, scope: as.grantScope }),
        );
        return;
      }
      json(404, { error: 'not_found' });
    });
  });
  return as;
}

/** A port that was free a moment ago, for a gateway whose public URL must be known before it starts. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
