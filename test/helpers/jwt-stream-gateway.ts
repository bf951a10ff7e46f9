// A gateway that takes JWTs from a real JWKS issuer (auth-server.ts), in front of the v1 SDK's server
// (polling-server.ts), with the legacy GET stream, subscriptions/listen and the 2024-11-05 SSE endpoint
// open: for tests of how long a listening stream outlives the token that opened it.

import { request } from 'undici';
import { startPollingServer, type PollingServer } from '../fixtures/upstreams/polling-server.js';
import { startAuthServer, type AuthServer } from './auth-server.js';
import { startGateway, type TestGateway } from './gateway.js';
import { LEGACY_HEADERS, post, rpc } from './http.js';

/** The audience the tokens name: the gateway's public URL (RFC 8707 resource). */
const PUBLIC_URL = 'https://mcp.example.test/mcp';

export interface JwtStreamGateway {
  gw: TestGateway;
  /** A token for `alice` whose `exp` is this many whole seconds from now (negative: already past). */
  tokenExpiringIn(seconds: number): Promise<string>;
  close(): Promise<void>;
}

export async function startJwtStreamGateway(opts: { clockSkewSeconds: number }): Promise<JwtStreamGateway> {
  const as: AuthServer = await startAuthServer();
  let up: PollingServer | undefined;
  let gw: TestGateway;
  try {
    up = await startPollingServer();
    gw = await startGateway({
      listen: { publicUrl: PUBLIC_URL, ssePath: '/sse', allowedHosts: ['127.0.0.1', 'mcp.example.test'] },
      upstreams: [{ name: 'poll', url: up.url, era: 'legacy' }],
      // No failure limit: the tests send expired tokens on purpose, and a lockout (429) would hide the 401 they check.
      auth: { failureLimit: { attempts: 0 }, oauth: { issuer: as.issuer, jwksUri: as.jwksUri, audience: PUBLIC_URL, clockSkewSeconds: opts.clockSkewSeconds } },
    });
  } catch (err) {
    // What did start is stopped, or the test process would not end.
    await up?.close();
    await as.close();
    throw err;
  }
  const upstream = up;
  return {
    gw,
    tokenExpiringIn: (seconds) => as.sign({ sub: 'alice', aud: PUBLIC_URL, scope: 'mcp:tools', exp: Math.floor(Date.now() / 1000) + seconds }),
    close: async () => {
      await gw.close();
      await upstream.close();
      await as.close();
    },
  };
}

/**
 * Opens a legacy (2025-11-25) GET stream: a session initialized with `sessionToken`, then the GET sent with
 * the token `streamToken` makes (the session is the caller's, whatever token it shows). That token is made
 * only once the session is up, so the time it has left counts from the GET. Resolves with the GET's response.
 */
export async function openLegacyGetStream(gw: TestGateway, sessionToken: string, streamToken: () => Promise<string>, clientName: string) {
  const headers = { ...LEGACY_HEADERS, authorization: `Bearer ${sessionToken}` };
  const init = await post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: clientName, version: '1' } }), headers);
  const session = init.headers['mcp-session-id'] as string;
  const withSession = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), withSession);
  return request(gw.url, { method: 'GET', headers: { ...withSession, accept: 'text/event-stream', authorization: `Bearer ${await streamToken()}` } });
}
