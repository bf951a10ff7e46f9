// Who is calling: every request on the MCP endpoint resolves to one Principal before anything else
// happens (DESIGN.md §2, auth stage). Policy, visibility, logs and /health all read this, never the
// credential itself.

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
  /** When the credential stops being valid (epoch ms), if known. */
  readonly expiresAt?: number;
}

/** Why a credential was refused; maps to the RFC 6750 error code in the challenge. */
export type AuthFailure =
  | { kind: 'missing' }
  | { kind: 'invalid_request'; message: string }
  | { kind: 'invalid_token'; reason: string; message: string }
  /** The gateway cannot judge the credential now (key set or introspection endpoint down): fail closed. */
  | { kind: 'unavailable'; message: string };

export type AuthResult = { ok: true; principal: Principal } | { ok: false; failure: AuthFailure };

export const ANONYMOUS: Principal = Object.freeze({ subject: 'anonymous', scopes: [], groups: [], via: 'anonymous' as const });

/** Scopes from a token's `scope` (space-separated string, RFC 8693/9068) or `scp` (array or string). */
export function scopesFromClaims(claims: Record<string, unknown>): string[] {
  const raw = claims.scope ?? claims.scp;
  if (typeof raw === 'string') return raw.split(' ').filter(Boolean);
  if (Array.isArray(raw)) return raw.filter((s): s is string => typeof s === 'string');
  return [];
}

/** A stable key for "the same caller", for anything the gateway keeps per caller (sessions, bindings). */
export function principalKey(p: Principal): string {
  return `${p.via}\u0000${p.tenant ?? ''}\u0000${p.subject}`;
}
