// RFC 9728 protected-resource metadata: how an OAuth client learns which authorization server issues
// tokens for this gateway (2026-07-28 authorization-server-discovery.mdx §Protected Resource Metadata
// Discovery Requirements). Served at the path-inserted and the root well-known URI, and named in every
// 401 challenge.

import type { GatehouseConfig } from '../config/types.js';

export const WELL_KNOWN_PREFIX = '/.well-known/oauth-protected-resource';

export interface ResourceMetadata {
  /** The document, serialized once. */
  readonly body: string;
  /** Absolute URL of the document, for `WWW-Authenticate: Bearer resource_metadata="…"`. */
  readonly url: string;
  /** Request paths on this listener that serve the document. */
  readonly paths: ReadonlySet<string>;
}

/** Undefined unless OAuth is configured: API keys alone have nothing to discover. */
export function buildResourceMetadata(config: GatehouseConfig): ResourceMetadata | undefined {
  const oauth = config.auth.oauth;
  const publicUrl = config.listen.publicUrl;
  if (!oauth || !publicUrl) return undefined;
  const resource = new URL(publicUrl);
  const resourcePath = resource.pathname === '/' ? '' : resource.pathname.replace(/\/$/, '');
  const doc = {
    resource: publicUrl,
    authorization_servers: oauth.authorizationServers ?? [oauth.issuer],
    // offline_access is never advertised (2026-07-28 authorization §Refresh Tokens).
    ...(oauth.scopesSupported ? { scopes_supported: oauth.scopesSupported.filter((s) => s !== 'offline_access') } : {}),
    bearer_methods_supported: ['header'],
    resource_name: 'Gatehouse MCP gateway',
  };
  // Behind a proxy the public path and the listener's path may differ; both forms are served.
  const paths = new Set([WELL_KNOWN_PREFIX + resourcePath, WELL_KNOWN_PREFIX + config.listen.path, WELL_KNOWN_PREFIX]);
  return { body: JSON.stringify(doc), url: `${resource.origin}${WELL_KNOWN_PREFIX}${resourcePath}`, paths };
}
