// The gateway is an OAuth resource server: it must accept only access tokens its issuer minted for this
// gateway (MCP authorization "Token Handling", RFC 8707 audience binding) and must judge them before
// anything else runs. This module turns a bearer token into a Principal or into one stable refusal
// reason that the edge maps to a 401 challenge (or a 503 when the issuer cannot be reached). Algorithm
// choice is never left to the token: symmetric and unsigned algorithms are refused before any key is
// looked up, which closes the "HS256 signed with the public key" and "alg: none" confusions.

import type { CryptoKey, errors as JoseErrors, JWTPayload, JWTVerifyGetKey } from 'jose';
import { loadJose, type Jose } from './jose.js';
import type { OAuthConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { Introspector } from './introspection.js';
import { isAsymmetricAlg, isRecord, JwksCache, KeySetUnavailableError, UnknownKeyError } from './jwks-cache.js';
import type { CredentialKind } from '../pipeline/principal.js';
import { scopesFromClaims, type AuthFailure, type AuthResult } from './auth-result.js';

export const DEFAULT_ALGORITHMS: readonly string[] = ['RS256', 'PS256', 'ES256', 'EdDSA'];

/** Stable refusal reasons, for logs and metrics; the client sees only the message. */
export type TokenFailureReason =
  | 'malformed'
  | 'alg_not_allowed'
  | 'unknown_kid'
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'wrong_type'
  | 'missing_claim'
  | 'inactive';

/**
 * The JWT access token type (RFC 9068 §2.1), required in `typ` under oauth.requireAccessTokenType: an ID token
 * (typ JWT) of the same issuer, audience and subject is not a grant to call this resource.
 */
const ACCESS_TOKEN_TYPE = 'at+jwt';

/** Far beyond any real access token; longer input is refused before it is parsed. */
const MAX_TOKEN_LENGTH = 16 * 1024;
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export class TokenVerifier {
  private readonly config: OAuthConfig;
  private readonly log: Logger;
  private readonly algorithms: string[];
  private readonly keys: JwksCache;
  private readonly introspector: Introspector | undefined;
  /**
   * Which way of judging tokens is out now (the key set, the introspection endpoint): an outage is logged
   * when it starts and when it ends. Until 4 December an error line was written for every request refused
   * meanwhile, hundreds a second under load, and nothing said when tokens were accepted again.
   */
  private readonly down = { jwt: false, introspection: false };
  /** The resources a token may be minted for: `audience`, and the other endpoints' public URLs. */
  private readonly audiences: readonly string[];

  /**
   * `otherAudiences`: the public URLs of this gateway's other endpoints (the SSE endpoint's), each its own
   * protected resource with its own metadata, so tokens are minted for them too (RFC 8707).
   */
  constructor(config: OAuthConfig, log: Logger, otherAudiences: readonly string[] = []) {
    this.config = config;
    this.audiences = [...new Set([config.audience, ...otherAudiences])];
    this.log = log.child({ component: 'token-verifier' });
    const wanted = config.algorithms ?? DEFAULT_ALGORITHMS;
    this.algorithms = wanted.filter(isAsymmetricAlg);
    const dropped = wanted.filter((a) => !isAsymmetricAlg(a));
    if (dropped.length > 0) this.log.warn('oauth.algorithms entries ignored: only asymmetric signatures are accepted', { dropped });
    if (this.algorithms.length === 0) throw new Error('oauth.algorithms names no usable asymmetric signature algorithm');
    // Loaded now, in the background, so the first token does not wait for it; a failure shows at that token.
    loadJose().catch(() => {});
    this.keys = new JwksCache(
      {
        issuer: config.issuer,
        jwksUri: config.jwksUri,
        algorithms: this.algorithms,
        maxAgeSeconds: config.jwksMaxAgeSeconds,
        minRefreshSeconds: config.jwksMinRefreshSeconds,
      },
      this.log,
    );
    this.introspector = config.introspection
      ? new Introspector({ ...config.introspection, issuer: config.issuer, audiences: this.audiences, clockSkewSeconds: config.clockSkewSeconds }, this.log)
      : undefined;
  }

  /** How often the key set and the introspection endpoint were asked; for health and tests. */
  get fetchCounts(): { jwks: number; introspection: number } {
    return { jwks: this.keys.fetchCount, introspection: this.introspector?.requestCount ?? 0 };
  }

  async verify(token: string): Promise<AuthResult> {
    const result = await this.judge(token).catch((err: unknown): AuthResult => {
      this.log.error('token verification failed unexpectedly', { error: err });
      return refuse('malformed', 'token could not be verified');
    });
    if (!result.ok) this.log.debug('token refused', { kind: result.failure.kind, ...(result.failure.kind === 'invalid_token' ? { reason: result.failure.reason } : {}) });
    return result;
  }

  close(): void {
    this.keys.close();
    this.introspector?.close();
  }

  private async judge(token: string): Promise<AuthResult> {
    if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) return refuse('malformed', 'token is malformed');
    const header = jwsHeader(token);
    if (header) return this.noteHealth('jwt', await this.verifyJwt(token, header));
    if (!this.introspector) return refuse('malformed', 'token is not a signed JWT');
    const answer = this.noteHealth('introspection', await this.introspector.introspect(token));
    return answer.ok ? this.toPrincipal(answer.claims, 'introspection') : answer;
  }

  /** Logs an outage of one way of judging tokens when it starts and when it ends; any other verdict means it works. */
  private noteHealth<R extends { ok: boolean; failure?: AuthFailure }>(via: 'jwt' | 'introspection', result: R): R {
    const down = !result.ok && result.failure?.kind === 'unavailable';
    if (down === this.down[via]) return result;
    this.down[via] = down;
    const what = via === 'jwt' ? 'the signing key set' : 'the introspection endpoint';
    if (down) this.log.error('cannot verify tokens now; refusing requests until it recovers', { via, reason: `${what} is unavailable` });
    else this.log.info('tokens can be verified again', { via });
    return result;
  }

  private async verifyJwt(token: string, header: Record<string, unknown>): Promise<AuthResult> {
    if (typeof header.alg !== 'string' || !this.algorithms.includes(header.alg)) return refuse('alg_not_allowed', 'token signing algorithm is not accepted');
    if (header.kid !== undefined && typeof header.kid !== 'string') return refuse('malformed', 'token is malformed');
    let payload: JWTPayload;
    const jose = await loadJose();
    try {
      payload = await this.verifiedPayload(token, jose);
    } catch (err) {
      return this.refusalFor(err, jose.errors);
    }
    // jose checks iat only against a maximum age; a token claiming to be issued later than now is forged
    // or comes from a badly skewed issuer, either way not to be trusted.
    if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + this.config.clockSkewSeconds) {
      return refuse('not_yet_valid', 'token is issued in the future');
    }
    return this.toPrincipal(payload, 'jwt');
  }

  /**
   * The payload once the signature and claims hold. The first key with the token's kid is tried by jose;
   * when the set publishes that kid more than once (or the token has none and several keys fit), a signature
   * it refuses is tried on each other such key. Only the signature differs between them: a claim refused
   * under one key would be under any.
   */
  private async verifiedPayload(token: string, { jwtVerify, errors }: Jose): Promise<JWTPayload> {
    const options = {
      issuer: this.config.issuer,
      audience: this.audiences as string[],
      algorithms: this.algorithms,
      clockTolerance: this.config.clockSkewSeconds,
      requiredClaims: ['exp', 'sub'],
      // RFC 9068 §4: the resource server MUST check typ is at+jwt; jose compares it as a media type
      // (case-insensitively, with or without `application/`). Opt-in: many issuers still send typ JWT.
      ...(this.config.requireAccessTokenType ? { typ: ACCESS_TOKEN_TYPE } : {}),
    };
    let others: CryptoKey[] = [];
    try {
      const firstKey: JWTVerifyGetKey = async (h) => {
        const [first, ...rest] = await this.keys.getKeys(typeof h.kid === 'string' ? h.kid : undefined, h.alg ?? '');
        others = rest;
        return first;
      };
      return (await jwtVerify(token, firstKey, options)).payload;
    } catch (err) {
      if (!(err instanceof errors.JWSSignatureVerificationFailed)) throw err;
      for (const key of others) {
        try {
          return (await jwtVerify(token, key, options)).payload;
        } catch (again) {
          if (!(again instanceof errors.JWSSignatureVerificationFailed)) throw again;
        }
      }
      throw err;
    }
  }

  private refusalFor(err: unknown, errors: typeof JoseErrors): AuthResult {
    if (err instanceof KeySetUnavailableError) return { ok: false, failure: { kind: 'unavailable', message: 'signing keys are unavailable; try again later' } };
    if (err instanceof UnknownKeyError) return refuse('unknown_kid', 'token signing key is not known');
    if (err instanceof errors.JOSEAlgNotAllowed) return refuse('alg_not_allowed', 'token signing algorithm is not accepted');
    if (err instanceof errors.JWSSignatureVerificationFailed) return refuse('bad_signature', 'token signature is invalid');
    if (err instanceof errors.JWTExpired) return refuse('expired', 'token has expired');
    if (err instanceof errors.JWTClaimValidationFailed) {
      if (err.reason === 'missing') return refuse('missing_claim', `token lacks the "${err.claim}" claim`);
      if (err.reason === 'check_failed') {
        if (err.claim === 'iss') return refuse('wrong_issuer', 'token was issued by another issuer');
        if (err.claim === 'aud') return refuse('wrong_audience', 'token was not issued for this resource');
        if (err.claim === 'nbf') return refuse('not_yet_valid', 'token is not valid yet');
        if (err.claim === 'typ') return refuse('wrong_type', 'token is not an access token: its typ header must be at+jwt (RFC 9068)');
      }
      return refuse('malformed', `token has an invalid "${err.claim}" claim`);
    }
    this.log.debug('token rejected by the JWT library', { error: err });
    return refuse('malformed', 'token is malformed');
  }

  /** The same claim mapping for both token kinds, so policy sees one Principal shape. */
  private toPrincipal(claims: Readonly<Record<string, unknown>>, via: CredentialKind): AuthResult {
    const sub = claims.sub;
    if (typeof sub !== 'string' || sub === '') return refuse('missing_claim', 'token lacks the "sub" claim');
    const tenant = this.config.tenantClaim !== undefined ? claims[this.config.tenantClaim] : undefined;
    const groups = this.config.groupsClaim !== undefined ? stringList(claims[this.config.groupsClaim]) : [];
    return {
      ok: true,
      principal: {
        subject: sub,
        ...(typeof tenant === 'string' && tenant !== '' ? { tenant } : {}),
        scopes: scopesFromClaims({ ...claims }),
        groups,
        via,
        ...(typeof claims.jti === 'string' ? { tokenId: claims.jti } : {}),
        // When this gateway stops accepting the token: exp plus the skew it is accepted within (jwtVerify's
        // clockTolerance, the introspection check). A stream opened inside the skew ends then; timed on exp
        // alone it ended at once and the client reconnected with the same token until the skew ran out.
        ...(typeof claims.exp === 'number' ? { expiresAt: (claims.exp + this.config.clockSkewSeconds) * 1000 } : {}),
      },
    };
  }
}

function refuse(reason: TokenFailureReason, message: string): AuthResult {
  return { ok: false, failure: { kind: 'invalid_token', reason, message } };
}

/** The protected header when the token is shaped like a JWS compact serialization, else undefined. */
function jwsHeader(token: string): Record<string, unknown> | undefined {
  if (!JWS_COMPACT.test(token)) return undefined;
  const first = token.slice(0, token.indexOf('.'));
  try {
    const header: unknown = JSON.parse(Buffer.from(first, 'base64url').toString('utf8'));
    return isRecord(header) && 'alg' in header ? header : undefined;
  } catch {
    return undefined;
  }
}

/** A groups claim as an array of strings or one space-separated string; anything else is no groups. */
function stringList(value: unknown): string[] {
  if (typeof value === 'string') return value.split(' ').filter(Boolean);
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string' && v !== '');
  return [];
}
