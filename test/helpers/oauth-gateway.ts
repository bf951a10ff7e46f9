// A gateway that takes OAuth tokens from a real local authorization server (auth-server.ts), in front of a
// JSON echo upstream, for the tests that drive the whole discovery with SDK clients. The gateway's port is
// chosen before it starts so that listen.publicUrl is the URL clients really call: the SDK clients check that
// the protected-resource metadata names the server they called (RFC 9728 §3.3).

import { freePort, startAuthServer, type AuthServer } from './auth-server.js';
import { startGateway, type TestGateway } from './gateway.js';
import { jsonEchoServer, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';

export interface OAuthGateway {
  as: AuthServer;
  upstream: FakeUpstream;
  gw: TestGateway;
  /** http://127.0.0.1:PORT: the MCP endpoint is `${origin}/mcp`. */
  origin: string;
  close(): Promise<void>;
}

export interface OAuthGatewayOptions {
  /** The client-credentials client the authorization server knows. */
  client: { id: string; secret: string };
  /** auth settings besides `oauth`, which names the authorization server, `${origin}/mcp` as the audience and supports mcp:tools. */
  auth: Record<string, unknown>;
  /** listen settings besides port and publicUrl. */
  listen?: Record<string, unknown>;
}

export async function startOAuthGateway(opts: OAuthGatewayOptions): Promise<OAuthGateway> {
  const as = await startAuthServer();
  as.clients.set(opts.client.id, opts.client.secret);
  const upstream = await startFakeUpstream(jsonEchoServer);
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const publicUrl = `${origin}/mcp`;
  const gw = await startGateway({
    listen: { port, publicUrl, ...opts.listen },
    upstreams: [{ name: 'up', url: upstream.url }],
    auth: { ...opts.auth, oauth: { issuer: as.issuer, audience: publicUrl, scopesSupported: ['mcp:tools'] } },
  });
  return {
    as,
    upstream,
    gw,
    origin,
    async close() {
      await gw.close();
      await upstream.close();
      await as.close();
    },
  };
}
