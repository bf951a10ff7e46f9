// Clients of the 2025-03-26 revision look for authorization-server metadata at the MCP server's own origin
// (`/.well-known/oauth-authorization-server`), before protected-resource metadata existed
// (GATEWAY-REQUIREMENTS §14; 2025-03-26/basic/authorization.mdx §Server Metadata Discovery). Gatehouse is
// not an authorization server, so it serves the configured issuer's own document there, unchanged: the
// endpoints it names are the issuer's, and so is its `issuer`.

import type { Agent } from 'undici';
import type { Logger } from '../log/logger.js';
import { boundedAgent, fetchIssuerMetadata } from './jwks-cache.js';

/** The issuer's document is refetched after this long, and a failed fetch is not retried sooner than RETRY_MS. */
const MAX_AGE_MS = 5 * 60_000;
const RETRY_MS = 10_000;
const LIMITS = { timeoutMs: 5_000, maxBytes: 256 * 1024 };


export const AS_METADATA_PATH = '/.well-known/oauth-authorization-server';

export class AsMetadataMirror {
  private readonly agent: Agent = boundedAgent(LIMITS);
  private cached: { body: string; until: number } | undefined;
  private failedAt = -Infinity;
  private fetching: Promise<string | undefined> | undefined;

  constructor(private readonly issuer: string, private readonly log: Logger) {}

  /** The issuer's metadata as JSON text, or undefined when it cannot be had now. */
  async document(): Promise<string | undefined> {
    const now = Date.now();
    if (this.cached && this.cached.until > now) return this.cached.body;
    if (now - this.failedAt < RETRY_MS) return this.cached?.body;
    this.fetching ??= this.fetch().finally(() => (this.fetching = undefined));
    return this.fetching;
  }

  close(): void {
    void this.agent.close().catch(() => {});
  }

  private async fetch(): Promise<string | undefined> {
    try {
      const { doc } = await fetchIssuerMetadata(this.agent, this.issuer, this.log);
      this.cached = { body: JSON.stringify(doc), until: Date.now() + MAX_AGE_MS };
      return this.cached.body;
    } catch {
      this.failedAt = Date.now();
      this.log.warn('the issuer metadata could not be fetched for legacy clients', { issuer: this.issuer });
      return this.cached?.body;
    }
  }
}
