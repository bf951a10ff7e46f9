// RFC 9728 protected-resource metadata: how an OAuth client learns which authorization server issues
// tokens for this gateway (2026-07-28 authorization-server-discovery.mdx §Protected Resource Metadata
// Discovery Requirements). Served at the path-inserted and the root well-known URI, and named in every
// 401 challenge. The 2024-11-05 SSE endpoint (listen.ssePath) has a document of its own: a client uses a
// document only when its `resource` is the URL it called (RFC 9728 §3.3; the v1 SDK takes a path prefix of
// it), and listen.publicUrl (…/mcp) is none of …/sse.

import type { GatehouseConfig } from '../config/types.js';
import { proxyPathPrefix } from '../net/path-prefix.js';

export const WELL_KNOWN_PREFIX = '/.well-known/oauth-protected-resource';

/** One protected resource's metadata document. */
export interface ResourceDocument {
  /** The resource identifier it names: the URL clients call, and the `aud` of tokens minted for it. */
  readonly resource: string;
  /** The document, serialized once. */
  readonly body: string;
  /** Absolute URL of the document, for `WWW-Authenticate: Bearer resource_metadata="…"`. */
  readonly url: string;
  /** Request paths on this listener that serve the document. */
  readonly paths: ReadonlySet<string>;
}

/** The MCP endpoint's document, and the SSE endpoint's when it is on. */
export interface ResourceMetadata extends ResourceDocument {
  readonly sse?: ResourceDocument;
  /** Every resource a token may be minted for here: listen.publicUrl, and the SSE endpoint's URL. */
  readonly audiences: readonly string[];
  /** The document served at a request path, if any. */
  documentAt(path: string): string | undefined;
}

/** Undefined unless OAuth is configured: API keys alone have nothing to discover. */
export function buildResourceMetadata(config: GatehouseConfig): ResourceMetadata | undefined {
  const oauth = config.auth.oauth;
  const publicUrl = config.listen.publicUrl;
  if (!oauth || !publicUrl) return undefined;
  const content = {
    authorization_servers: oauth.authorizationServers ?? [oauth.issuer],
    // offline_access is never advertised (2026-07-28 authorization §Refresh Tokens).
    ...(oauth.scopesSupported ? { scopes_supported: oauth.scopesSupported.filter((s) => s !== 'offline_access') } : {}),
    bearer_methods_supported: ['header'],
    resource_name: 'Gatehouse MCP gateway',
  };
  const resource = new URL(publicUrl);
  const prefix = proxyPathPrefix(config.listen.path, publicUrl);
  const mcp = documentFor(publicUrl, config.listen.path, prefix, content);
  // The root form names the MCP endpoint: clients that guess it know no other.
  const mcpDoc: ResourceDocument = { ...mcp, paths: new Set([...mcp.paths, WELL_KNOWN_PREFIX]) };
  const ssePath = config.listen.ssePath;
  // The SSE endpoint as clients reach it: behind the same proxy prefix as the MCP endpoint (sse-endpoint.ts).
  const sse = ssePath === undefined ? undefined : documentFor(`${resource.origin}${prefix}${ssePath}`, ssePath, prefix, content);
  const documents = sse === undefined ? [mcpDoc] : [mcpDoc, sse];
  return {
    ...mcpDoc,
    ...(sse !== undefined ? { sse } : {}),
    audiences: documents.map((d) => d.resource),
    documentAt: (path) => documents.find((d) => d.paths.has(path))?.body,
  };
}

/**
 * The document of the resource clients reach at `publicUrl`, which this listener serves at `localPath`.
 * Behind a proxy the public path and the listener's path may differ; both forms are served.
 */
function documentFor(publicUrl: string, localPath: string, prefix: string, content: object): ResourceDocument {
  const resource = new URL(publicUrl);
  const resourcePath = trimSlash(resource.pathname);
  const listenPath = trimSlash(localPath);
  const paths = new Set([WELL_KNOWN_PREFIX + resourcePath, WELL_KNOWN_PREFIX + localPath, WELL_KNOWN_PREFIX + listenPath]);
  const body = JSON.stringify({ resource: publicUrl, ...content });
  return { resource: publicUrl, body, url: metadataUrl(resource, resourcePath, prefix, listenPath), paths };
}

function trimSlash(path: string): string {
  return path === '/' ? '' : path.replace(/\/$/, '');
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
function metadataUrl(resource: URL, resourcePath: string, prefix: string, listenPath: string): string {
  if (prefix === '') return `${resource.origin}${WELL_KNOWN_PREFIX}${resourcePath}`;
  return `${resource.origin}${prefix}${WELL_KNOWN_PREFIX}${listenPath}`;
}
