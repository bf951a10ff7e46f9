// `WWW-Authenticate` values (RFC 6750 §3, 2026-07-28 authorization §Error Handling): which error, which
// scopes would help, and where the protected-resource metadata lives. Values are quoted strings. Only the
// free-text error_description may name what the request asked for (a resource URI, chosen by the client or
// by an upstream's resource link), so it comes last: clients that take a parameter as the first `name=` in
// the header (the v1 SDK's extractWWWAuthenticateParams) read every other one before any text of it.

import type { AuthRefusal } from '../errors.js';

export interface ChallengeInput {
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
  description?: string;
  scopes?: readonly string[];
  resourceMetadataUrl?: string;
}

export function bearerChallenge(c: ChallengeInput): string {
  const parts: string[] = [];
  // realm first for clients that only read the first parameter; then the RFC 9728 pointer.
  parts.push('realm="gatehouse"');
  if (c.resourceMetadataUrl) parts.push(`resource_metadata="${c.resourceMetadataUrl}"`);
  if (c.error) parts.push(`error="${c.error}"`);
  // offline_access asks for a refresh token, not for access to this resource: never asked for in a challenge
  // (2026-07-28 authorization §Refresh Tokens), even when the caller's token carries it.
  const scopes = c.scopes?.filter((scope) => scope !== 'offline_access');
  if (scopes && scopes.length > 0) parts.push(`scope="${quoteSafe(scopes.join(' '))}"`);
  // Last (see above): until 4 December it came before scope, and a URI holding `scope=admin` made the v1 SDK
  // client ask the authorization server for admin instead of the scopes named here.
  if (c.description) parts.push(`error_description="${quoteSafe(c.description)}"`);
  return `Bearer ${parts.join(', ')}`;
}

/** RFC 6750 restricts these values to printable ASCII without `"` and `\`. */
function quoteSafe(s: string): string {
  return s.replace(/[^\x20-\x21\x23-\x5B\x5D-\x7E]/g, '');
}

/**
 * 403 for one operation the token lacks scopes for (2025-11-25/basic/authorization.mdx §Runtime
 * Insufficient Scope Errors): the challenge names every scope to ask for, so the client can step up.
 */
export function insufficientScope(scopes: readonly string[], message: string, resourceMetadataUrl: string | undefined): AuthRefusal {
  const challenge = bearerChallenge({ error: 'insufficient_scope', scopes, description: message, ...(resourceMetadataUrl !== undefined ? { resourceMetadataUrl } : {}) });
  return { kind: 'auth', code: 'insufficient_scope', status: 403, message, headers: { 'www-authenticate': challenge }, rejectedCredential: false, scopes };
}
