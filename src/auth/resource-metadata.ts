// RFC 9728 protected-resource metadata: how an OAuth client learns which authorization server issues
// tokens for this gateway (2026-07-28 authorization-server-discovery.mdx §Protected Resource Metadata
// Discovery Requirements). Served at the path-inserted and the root well-known URI, and named in every
// 401 challenge.

import type { GatehouseConfig } from '../config/types.js';
import { proxyPathPrefix } from '../net/path-prefix.js';

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
  const listenPath = config.listen.path === '/' ? '' : config.listen.path.replace(/\/$/, '');
  const paths = new Set([WELL_KNOWN_PREFIX + resourcePath, WELL_KNOWN_PREFIX + config.listen.path, WELL_KNOWN_PREFIX + listenPath, WELL_KNOWN_PREFIX]);
  return { body: JSON.stringify(doc), url: metadataUrl(resource, resourcePath, config.listen.path, listenPath), paths };
}

/**
 * The URL named in every challenge's `resource_metadata`, which clients follow before any well-known guess
 * (2025-11-25 authorization §Protected Resource Metadata Discovery Requirements). Without a proxy prefix it
 * is the RFC 9728 §3.1 well-known URI of the resource. Behind a prefix-stripping proxy (`/gw/mcp` public,
 * `/mcp` here) it is the document under the prefix (`/gw/.well-known/oauth-protected-resource/mcp`, which
 * the proxy forwards as a path served above): until 4 December it was the well-known URI at the origin's
 * root, which such a proxy routes elsewhere, so a client following it got the proxy's 404, took the MCP
 * host for its authorization server and sent its client credentials there.
 */
function metadataUrl(resource: URL, resourcePath: string, mcpPath: string, listenPath: string): string {
  const prefix = proxyPathPrefix(mcpPath, resource.href);
  if (prefix === '') return `${resource.origin}${WELL_KNOWN_PREFIX}${resourcePath}`;
  return `${resource.origin}${prefix}${WELL_KNOWN_PREFIX}${listenPath}`;
}
