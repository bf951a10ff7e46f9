// The edge's auth stage: turns the Authorization header into a Principal, or into the refusal the spec
// asks for (2026-07-28 authorization §Error Handling): 400 for a malformed request, 401 with a challenge
// naming the protected-resource metadata, 403 insufficient_scope, 503 when the key set or introspection
// endpoint is down (fail closed, without telling the client its token is bad). Credentials are accepted
// from the header only.

import type { IncomingHttpHeaders } from 'node:http';
import type { GatehouseConfig } from '../config/types.js';
import type { AuthRefusal } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { ApiKeys } from './api-keys.js';
import { B64TOKEN, KeyShape } from './key-hash.js';
import { AsMetadataMirror } from './as-metadata-mirror.js';
import { bearerChallenge } from './challenge.js';
import { compileQueryCredentialCheck, credentialInMessage, type QueryCredentialCheck } from './credential-locations.js';
import { ANONYMOUS, type Principal } from '../pipeline/principal.js';
import type { AuthResult } from './auth-result.js';
import { buildResourceMetadata, type ResourceMetadata } from './resource-metadata.js';
import { TokenVerifier } from './token-verifier.js';

export type AuthVerdict = { ok: true; principal: Principal } | { ok: false; refusal: AuthRefusal };

/**
 * Which endpoint a credential was presented to, so that a challenge names that endpoint's metadata: the MCP
 * endpoint's, or the 2024-11-05 SSE endpoint's (its own resource, resource-metadata.ts).
 */
export type ChallengedEndpoint = 'mcp' | 'sse';

/** How one credential is judged: whether the MCP endpoint's requiredScopes apply, and whose challenge to send. */
interface Judging {
  readonly scoped: boolean;
  readonly at: ChallengedEndpoint;
}
/** Made once: every call is judged one of these ways. */
const JUDGING: Readonly<Record<ChallengedEndpoint, Judging>> = { mcp: { scoped: true, at: 'mcp' }, sse: { scoped: true, at: 'sse' } };
const UNSCOPED: Judging = { scoped: false, at: 'mcp' };

/** RFC 6750 §2.1: `Bearer` then one b64token. */
const BEARER = new RegExp(`^Bearer +(${B64TOKEN}) *$`, 'i');

export class Authenticator {
  readonly metadata: ResourceMetadata | undefined;
  /** The issuer's own metadata, served at this origin for 2025-03-26 clients (OAuth only). */
  readonly asMetadata: AsMetadataMirror | undefined;
  private readonly keys: ApiKeys;
  /** What our keys start with (gh_, auth.apiKeyPrefixes): a value so shaped is never taken for a token. */
  private readonly keyShape: KeyShape;
  /** The built-in credential names plus auth.queryCredentialNames. */
  private readonly queryCredential: QueryCredentialCheck;
  private tokens: TokenVerifier | undefined;
  private readonly oauthSettings: string;
  private readonly anonymous: boolean;
  private readonly anonymousOnly: boolean;
  private readonly requiredScopes: readonly string[];

  /** `previous`: the authenticator being replaced by a reload; its token verifier (and key cache) is kept when the OAuth settings did not change. */
  constructor(config: GatehouseConfig, private readonly log: Logger, previous?: Authenticator) {
    this.keys = new ApiKeys(config.auth.apiKeys);
    this.keyShape = new KeyShape(config.auth.apiKeyPrefixes);
    this.queryCredential = compileQueryCredentialCheck(config.auth.queryCredentialNames);
    this.metadata = buildResourceMetadata(config);
    // Tokens may be minted for either endpoint's resource; a change of either is a new verifier.
    const audiences = this.metadata?.audiences ?? [];
    this.oauthSettings = JSON.stringify([config.auth.oauth ?? null, audiences]);
    const reusable = previous !== undefined && previous.oauthSettings === this.oauthSettings ? previous.tokens : undefined;
    this.tokens = reusable ?? (config.auth.oauth ? new TokenVerifier(config.auth.oauth, log.child({ component: 'auth' }), audiences) : undefined);
    this.anonymous = config.auth.anonymous;
    this.anonymousOnly = config.auth.anonymous && config.auth.apiKeys.length === 0 && config.auth.oauth === undefined;
    this.requiredScopes = config.auth.requiredScopes;
    this.asMetadata = config.auth.oauth ? new AsMetadataMirror(config.auth.oauth.issuer, log) : undefined;
    // Handed over last, once nothing above can throw: a reload refused here leaves the running one its verifier.
    if (reusable && previous) previous.tokens = undefined; // the old one must not close it
  }

  /** True when a request without credentials is still served (loopback demo mode). */
  get allowsAnonymous(): boolean {
    return this.anonymous;
  }

  /** Credentials in the query string are refused before anything else is looked at. */
  checkUrl(url: string | undefined, at: ChallengedEndpoint = 'mcp'): AuthVerdict | undefined {
    const name = this.queryCredential(url);
    if (name === undefined) return undefined;
    return this.refuse(at, 400, 'credential_in_query', `Credentials are not accepted in the query string (found "${name}"); send them in the Authorization header as "Bearer <token>"`, 'invalid_request');
  }

  /** A credential in the JSON-RPC body or `_meta` is refused: it would otherwise travel on to an upstream. */
  checkMessage(message: unknown, at: ChallengedEndpoint = 'mcp'): AuthVerdict | undefined {
    const where = credentialInMessage(message);
    if (where === undefined) return undefined;
    return this.refuse(at, 400, 'credential_in_body', `Credentials are not accepted in the request body (found "${where}"); send them in the Authorization header as "Bearer <token>"`, 'invalid_request');
  }

  /**
   * The Principal for the request's Authorization header. Synchronous for API keys and for requests
   * without credentials, so the common case costs no extra tick; OAuth tokens are verified asynchronously.
   */
  authenticate(headers: IncomingHttpHeaders, at: ChallengedEndpoint = 'mcp'): AuthVerdict | Promise<AuthVerdict> {
    return this.check(headers, JUDGING[at]);
  }

  /**
   * The credential's own verdict, without `auth.requiredScopes`: those are the MCP endpoint's ("every caller
   * needs [them] to use the MCP endpoint at all"), not the admin API's, whose reviewers are judged by group.
   * Until 4 December the admin API asked `authenticate`, so a reviewer's valid token without the endpoint's
   * scopes was answered 401 "not valid" there and counted as a failed attempt, locking the reviewer's address
   * out of both ports.
   */
  verifyCredential(headers: IncomingHttpHeaders): AuthVerdict | Promise<AuthVerdict> {
    return this.check(headers, UNSCOPED);
  }

  private check(headers: IncomingHttpHeaders, j: Judging): AuthVerdict | Promise<AuthVerdict> {
    // Anonymous-only (loopback demo): nothing could verify a credential, so none is looked at; it is
    // still never forwarded. Short of requiredScopes it stays 403: no credential could help, so a 401 would
    // send the client after one in vain.
    if (this.anonymousOnly) return this.grant(ANONYMOUS, j);
    const header = headers.authorization;
    if (header === undefined || header === '') {
      if (this.anonymous) return this.grantAnonymous(j);
      return this.refuse(j.at, 401, 'missing_credentials', 'Authentication required: send "Authorization: Bearer <token>"');
    }
    const m = BEARER.exec(header);
    if (!m) {
      // Another scheme is simply not ours: challenge for Bearer. A broken Bearer header is a bad request.
      if (!/^bearer(\s|$)/i.test(header)) return this.refuse(j.at, 401, 'unsupported_scheme', 'Only Bearer credentials are accepted: send "Authorization: Bearer <token>"');
      return this.refuse(j.at, 400, 'malformed_authorization', 'Malformed Authorization header: expected "Bearer <token>"', 'invalid_request');
    }
    const token = m[1]!;
    const byKey = this.keys.verify(token);
    if (byKey) return this.conclude(byKey, j);
    if (!this.tokens || this.keyShape.matches(token)) return this.refuse(j.at, 401, 'unknown_key', 'The credential is not valid', 'invalid_token');
    return this.tokens.verify(token).then(
      (r) => this.conclude(r, j),
      (err: unknown) => {
        this.log.error('token verification failed unexpectedly; refusing', { err });
        return this.refuse(j.at, 503, 'auth_unavailable', 'Authentication is temporarily unavailable');
      },
    );
  }

  close(): void {
    this.tokens?.close?.();
    this.asMetadata?.close();
  }

  private conclude(result: AuthResult, j: Judging): AuthVerdict {
    if (result.ok) return this.grant(result.principal, j);
    const f = result.failure;
    switch (f.kind) {
      case 'missing':
        return this.refuse(j.at, 401, 'missing_credentials', 'Authentication required');
      case 'invalid_request':
        return this.refuse(j.at, 400, 'invalid_request', f.message, 'invalid_request');
      case 'invalid_token':
        return this.refuse(j.at, 401, f.reason, f.message, 'invalid_token');
      case 'unavailable':
        // Logged by the token verifier when the outage starts and ends, not here for each request refused.
        return this.refuse(j.at, 503, 'auth_unavailable', 'Authentication is temporarily unavailable; retry later');
    }
  }

  /**
   * 2026-07-28 authorization §Runtime Insufficient Scope Errors: on the MCP endpoint, 403 naming every scope
   * needed.
   */
  private grant(principal: Principal, j: Judging): AuthVerdict {
    // Most configs require none: no array is made per call for them.
    if (!j.scoped || this.requiredScopes.length === 0) return { ok: true, principal };
    const missing = this.requiredScopes.filter((s) => !principal.scopes.includes(s));
    if (missing.length === 0) return { ok: true, principal };
    const refusal = this.refuse(j.at, 403, 'insufficient_scope', `Insufficient scope: this endpoint needs ${this.requiredScopes.join(' ')}`, 'insufficient_scope');
    return refusal;
  }

  /**
   * A request without any credential, with anonymous access on next to keys or tokens. When the anonymous
   * identity lacks the endpoint's requiredScopes, the request lacks authentication, not scope: 401 with the
   * challenge (RFC 6750 §3.1, no error code; 2026-07-28 authorization §Error Handling), so the client learns
   * to authenticate. Until 4 December this was 403 insufficient_scope, which a client reads as "the token you
   * sent lacks scopes" and which named no token to fix.
   */
  private grantAnonymous(j: Judging): AuthVerdict {
    const verdict = this.grant(ANONYMOUS, j);
    if (verdict.ok) return verdict;
    return this.refuse(j.at, 401, 'missing_credentials', 'Authentication required: anonymous callers lack the scopes this endpoint needs; send "Authorization: Bearer <token>"');
  }

  /** The protected-resource metadata a challenge at `at` names: the SSE endpoint has its own resource. */
  metadataUrlFor(at: ChallengedEndpoint): string | undefined {
    return at === 'sse' && this.metadata?.sse !== undefined ? this.metadata.sse.url : this.metadata?.url;
  }

  private refuse(at: ChallengedEndpoint, status: AuthRefusal['status'], code: string, message: string, error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope'): AuthVerdict {
    const metadataUrl = this.metadataUrlFor(at);
    const headers: Record<string, string> = {};
    if (status === 401 || status === 403 || (status === 400 && error !== undefined)) {
      headers['www-authenticate'] = bearerChallenge({
        ...(error ? { error } : {}),
        ...(metadataUrl !== undefined ? { resourceMetadataUrl: metadataUrl } : {}),
        // The scopes that would help: the ones this endpoint requires (2026-07-28 §Scope Selection Strategy).
        ...(this.requiredScopes.length > 0 ? { scopes: this.requiredScopes } : {}),
      });
    }
    if (status === 503) headers['retry-after'] = '5';
    const rejectedCredential = (status === 401 && code !== 'missing_credentials') || code === 'malformed_authorization';
    return { ok: false, refusal: { kind: 'auth', code, status, message, headers, rejectedCredential } };
  }
}
