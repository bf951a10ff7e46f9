// What a credential check concludes: a Principal, or why the credential was refused. The mapping from
// token claims to a Principal's scopes is shared by JWTs and introspection answers.

import type { Principal } from '../pipeline/principal.js';

/** Why a credential was refused; maps to the RFC 6750 error code in the challenge. */
export type AuthFailure =
  | { kind: 'missing' }
  | { kind: 'invalid_request'; message: string }
  | { kind: 'invalid_token'; reason: string; message: string }
  /** The gateway cannot judge the credential now (key set or introspection endpoint down): fail closed. */
  | { kind: 'unavailable'; message: string };

export type AuthResult = { ok: true; principal: Principal } | { ok: false; failure: AuthFailure };

/** Scopes from a token's `scope` (space-separated string, RFC 8693/9068) or `scp` (array or string). */
export function scopesFromClaims(claims: Record<string, unknown>): string[] {
  const raw = claims.scope ?? claims.scp;
  if (typeof raw === 'string') return raw.split(' ').filter(Boolean);
  if (Array.isArray(raw)) return raw.filter((s): s is string => typeof s === 'string');
  return [];
}
