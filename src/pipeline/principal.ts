// Who is calling: every request on the MCP endpoint resolves to one Principal before anything else
// happens (DESIGN.md §2, auth stage). Policy, visibility, sessions, logs and /health all read this, never
// the credential itself. It lives with the call context because every stage after auth reads it.

export type CredentialKind = 'api_key' | 'jwt' | 'introspection' | 'anonymous';

export interface Principal {
  /** `key:<id>` for API keys, the token's `sub` for OAuth, `anonymous` without auth. */
  readonly subject: string;
  readonly tenant?: string;
  readonly scopes: readonly string[];
  readonly groups: readonly string[];
  readonly via: CredentialKind;
  /** The API key's configured id. */
  readonly keyId?: string;
  /** The token's `jti`, when it has one. */
  readonly tokenId?: string;
  /** Tool ref globs the credential itself is limited to (API key `tools`); undefined means no limit. */
  readonly toolGlobs?: readonly string[];
  /** When the credential stops being accepted here (epoch ms), if known: a token's exp plus the configured clock skew. */
  readonly expiresAt?: number;
}

export const ANONYMOUS: Principal = Object.freeze({ subject: 'anonymous', scopes: [], groups: [], via: 'anonymous' as const });

/**
 * A stable key for "the same caller", for anything the gateway keeps per caller (sessions, bindings); it
 * reads only what an approval keeps of its caller, so a stored caller gives the same key.
 */
export function principalKey(p: { readonly via: string; readonly tenant?: string | undefined; readonly subject: string }): string {
  return `${p.via}\u0000${p.tenant ?? ''}\u0000${p.subject}`;
}
