// A gateway whose approvals OAuth reviewers decide (admin.groups, a rule's reviewers): a real authorization
// server on loopback signs the reviewers' tokens, the counting upstream `up` runs the calls, and the gateway
// listens on a port chosen before it starts, so its public URL, the tokens' audience, is its real one.

import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { freePort, startAuthServer, type AuthServer } from './auth-server.js';
import { startGateway, type TestGateway } from './gateway.js';

export interface ReviewerGatewayConfig {
  /** auth.apiKeys: callers who are no reviewers (none when left out). */
  apiKeys?: Array<Record<string, unknown>>;
  /** More of auth.oauth; issuer, audience and groupsClaim (`groups`) are set here. */
  oauth?: Record<string, unknown>;
  admin: Record<string, unknown>;
  policy: Record<string, unknown>;
  store?: Record<string, unknown>;
}

export interface ReviewerGateway {
  as: AuthServer;
  up: CountingUpstream;
  gw: TestGateway;
  /** The MCP endpoint's public URL: the audience of the reviewers' tokens. */
  publicUrl: string;
  /** An access token for this gateway, of `sub` in `groups`. */
  tokenFor(sub: string, groups: string[]): Promise<string>;
  /** Closes the gateway, then the upstream and the authorization server. */
  close(): Promise<void>;
}

export async function startReviewerGateway(config: ReviewerGatewayConfig): Promise<ReviewerGateway> {
  const as = await startAuthServer();
  let up: CountingUpstream | undefined;
  let gw: TestGateway;
  let publicUrl: string;
  try {
    await as.newKey('k1');
    up = await startCountingUpstream('modern');
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}/mcp`;
    const oauth = { issuer: as.issuer, audience: publicUrl, groupsClaim: 'groups', ...config.oauth };
    gw = await startGateway({
      listen: { port, publicUrl },
      upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
      ...(config.store ? { store: config.store } : {}),
      auth: { ...(config.apiKeys ? { apiKeys: config.apiKeys } : {}), oauth },
      admin: config.admin,
      policy: config.policy,
    });
  } catch (err) {
    // What did start is stopped, or the test process would not end.
    await up?.close();
    await as.close();
    throw err;
  }
  const upstream = up;
  const audience = publicUrl;
  return {
    as,
    up: upstream,
    gw,
    publicUrl: audience,
    tokenFor: (sub, groups) => as.sign({ sub, aud: audience, groups }),
    close: async () => {
      await gw.close();
      await upstream.close();
      await as.close();
    },
  };
}
