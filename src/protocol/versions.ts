// The protocol version table and era classification (shared/spec/GATEWAY-REQUIREMENTS.md §0, §5).

export const MODERN_VERSIONS = ['2026-07-28'] as const;
/** Newest first: `initialize` negotiation answers the client's version when listed here. */
export const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;
export const SUPPORTED_VERSIONS: readonly string[] = [...MODERN_VERSIONS, ...LEGACY_VERSIONS];
export const LATEST_LEGACY_VERSION = LEGACY_VERSIONS[0];

/**
 * A request without `MCP-Protocol-Version` is treated as 2025-03-26
 * (2025-11-25/basic/transports.mdx §Protocol Version Header).
 */
export const DEFAULT_LEGACY_VERSION = '2025-03-26';

/**
 * The MCP-Protocol-Version header for a request on a legacy session of `version`, when that revision has it:
 * it came with 2025-06-18 (2025-11-25/basic/transports.mdx §Protocol Version Header), so 2025-03-26 and
 * 2024-11-05 servers never see it.
 */
export function protocolVersionHeader(version: string): Record<string, string> {
  return hasProtocolVersionHeader(version) ? { 'mcp-protocol-version': version } : {};
}

/** Whether requests of a legacy session of `version` carry MCP-Protocol-Version (from 2025-06-18 on). */
export function hasProtocolVersionHeader(version: string): boolean {
  return version !== '2025-03-26' && version !== '2024-11-05';
}

export type ClientEra = 'modern' | 'legacy';

export function isModernVersion(v: string | undefined): boolean {
  return v !== undefined && (MODERN_VERSIONS as readonly string[]).includes(v);
}

export function isLegacyVersion(v: string | undefined): boolean {
  return v !== undefined && (LEGACY_VERSIONS as readonly string[]).includes(v);
}

/**
 * Legacy `initialize` negotiation (2025-11-25/basic/lifecycle.mdx §Version Negotiation): echo the client's
 * version when supported, otherwise answer with our latest.
 */
export function negotiateLegacyVersion(requested: unknown): string {
  return typeof requested === 'string' && isLegacyVersion(requested) ? requested : LATEST_LEGACY_VERSION;
}
