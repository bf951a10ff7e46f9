// A gateway that takes JWTs from a real JWKS issuer (auth-server.ts), in front of the v2 SDK's modern server,
// whose policy rules may answer a caller lacking their scopes with a 403 insufficient_scope challenge
// (onMissingScopes: challenge): for tests of step-up authorization and of the challenge a client reads.

import { startModernServer, type ModernServer } from '../fixtures/upstreams/modern-server.js';
import { startAuthServer, type AuthServer } from './auth-server.js';
import { startGateway, type TestGateway } from './gateway.js';

export interface ScopeChallengeGateway {
  as: AuthServer;
  /** The modern upstream, named `m`. */
  upstream: ModernServer;
  gw: TestGateway;
  /** Closes the gateway, then the upstream, then the issuer. */
  close(): Promise<void>;
}

/** Its audience is `publicUrl` (listen.publicUrl); failed authentications are not limited. */
export async function startScopeChallengeGateway(publicUrl: string, scopesSupported: string[], rules: Array<Record<string, unknown>>): Promise<ScopeChallengeGateway> {
  let as: AuthServer | undefined;
  let upstream: ModernServer | undefined;
  let gw: TestGateway | undefined;
  const close = async (): Promise<void> => {
    await gw?.close();
    await upstream?.close();
    await as?.close();
  };
  try {
    as = await startAuthServer();
    upstream = await startModernServer();
    gw = await startGateway({
      listen: { publicUrl },
      upstreams: [{ name: 'm', url: upstream.url, era: 'modern' }],
      auth: {
        failureLimit: { attempts: 0 },
        oauth: { issuer: as.issuer, jwksUri: as.jwksUri, audience: publicUrl, scopesSupported },
      },
      policy: { rules },
    });
  } catch (err) {
    await close();
    throw err;
  }
  return { as, upstream, gw, close };
}
