// Opaque access tokens carry nothing the gateway can check itself, so the authorization server is asked
// (RFC 7662). Asking on every request would tie the gateway's latency and availability to that server,
// so answers are reused for a short, bounded time: never past the token's own expiry, and a "no" only
// briefly so a token that just became valid is not refused for long. The cache is keyed by a hash of
// the token so a heap dump does not hand out live credentials.

import { createHash } from 'node:crypto';
import { growingLru } from '../lru.js';
import type { Logger } from '../log/logger.js';
import type { AuthFailure } from './auth-result.js';
import { boundedAgent, isRecord, requestJson, type HttpLimits } from './jwks-cache.js';

export interface IntrospectorOptions {
  url: string;
  clientId: string;
  clientSecret: string;
  cacheMaxSeconds: number;
  /** When the answer names an issuer it must be this one. */
  issuer: string;
  /** The answer's audiences must include one of this gateway's resources (RFC 8707). */
  audiences: readonly string[];
  /** An answer without aud is accepted (for authorization servers that never return one). */
  acceptMissingAudience?: boolean;
  clockSkewSeconds: number;
}

/** The claims of an active token meant for this gateway, or why it is refused. */
export type IntrospectionResult = { ok: true; claims: Readonly<Record<string, unknown>> } | { ok: false; failure: AuthFailure };

const LIMITS: HttpLimits = { timeoutMs: 5_000, maxBytes: 64 * 1024 };
const MAX_ENTRIES = 10_000;
/** A refusal is cached at most this long, so a token refused in a race with its issuance recovers soon. */
const REFUSAL_CACHE_MS = 30_000;

interface CacheEntry {
  readonly result: IntrospectionResult;
  /** Date.now() after which the entry must not be used, whatever the LRU thinks. */
  readonly until: number;
}

export class Introspector {
  private readonly opts: IntrospectorOptions;
  private readonly log: Logger;
  private readonly agent = boundedAgent(LIMITS);
  private readonly cache = growingLru<string, CacheEntry>(MAX_ENTRIES);
  private readonly inFlight = new Map<string, Promise<IntrospectionResult>>();
  private readonly authorization: string;
  /** How many introspection requests were sent; for health and tests. */
  requestCount = 0;

  constructor(opts: IntrospectorOptions, log: Logger) {
    this.opts = opts;
    this.log = log;
    // RFC 6749 §2.3.1: id and secret are form-encoded before they are joined and base64-encoded.
    this.authorization = `Basic ${Buffer.from(`${formEncode(opts.clientId)}:${formEncode(opts.clientSecret)}`).toString('base64')}`;
  }

  async introspect(token: string): Promise<IntrospectionResult> {
    const key = createHash('sha256').update(token).digest('base64url');
    const cached = this.cache.get(key);
    if (cached && cached.until > Date.now()) return cached.result;
    const running = this.inFlight.get(key);
    if (running) return running;
    const pending = this.ask(token, key).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, pending);
    return pending;
  }

  close(): void {
    void this.agent.close().catch(() => undefined);
  }

  private async ask(token: string, key: string): Promise<IntrospectionResult> {
    let answer: unknown;
    try {
      this.requestCount++;
      answer = await requestJson(
        this.agent,
        this.opts.url,
        {
          method: 'POST',
          headers: { authorization: this.authorization, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        },
        LIMITS,
      );
    } catch (err) {
      this.log.warn('token introspection failed', { error: err });
      return { ok: false, failure: { kind: 'unavailable', message: 'token introspection is unavailable' } };
    }
    if (!isRecord(answer) || !validTimes(answer)) {
      this.log.warn('token introspection answer is malformed');
      return { ok: false, failure: { kind: 'unavailable', message: 'token introspection is unavailable' } };
    }
    const now = Date.now();
    const result = this.judge(answer, now);
    const ttl = this.cacheMs(result, answer, now);
    if (ttl > 0) this.cache.set(key, { result, until: now + ttl }, { ttl });
    return result;
  }

  private judge(answer: Record<string, unknown>, now: number): IntrospectionResult {
    if (answer.active !== true) return refuse('inactive', 'token is not active');
    if (answer.iss !== undefined && answer.iss !== this.opts.issuer) return refuse('wrong_issuer', 'token was issued by another issuer');
    // 2026-07-28 authorization §Token Handling: a token not issued for this server is refused, and one whose
    // answer names no audience cannot be shown to be for it (RFC 7662 makes aud optional).
    if (answer.aud === undefined ? this.opts.acceptMissingAudience !== true : !audiences(answer.aud).some((a) => this.opts.audiences.includes(a))) {
      return refuse('wrong_audience', answer.aud === undefined ? 'token introspection names no audience, so the token cannot be shown to be for this resource' : 'token was not issued for this resource');
    }
    const skewMs = this.opts.clockSkewSeconds * 1000;
    if (typeof answer.exp === 'number' && answer.exp * 1000 <= now - skewMs) return refuse('expired', 'token has expired');
    if (typeof answer.nbf === 'number' && answer.nbf * 1000 > now + skewMs) return refuse('not_yet_valid', 'token is not valid yet');
    return { ok: true, claims: answer };
  }

  /** How long an answer may be reused: bounded by config, by the token's expiry, and short for refusals. */
  private cacheMs(result: IntrospectionResult, answer: Record<string, unknown>, now: number): number {
    let ttl = this.opts.cacheMaxSeconds * 1000;
    if (!result.ok) ttl = Math.min(ttl, REFUSAL_CACHE_MS);
    if (typeof answer.exp === 'number') ttl = Math.min(ttl, answer.exp * 1000 - now);
    return Math.max(0, Math.floor(ttl));
  }
}

function refuse(reason: string, message: string): IntrospectionResult {
  return { ok: false, failure: { kind: 'invalid_token', reason, message } };
}

function audiences(aud: unknown): string[] {
  if (typeof aud === 'string') return [aud];
  if (Array.isArray(aud)) return aud.filter((a): a is string => typeof a === 'string');
  return [];
}

/** Time claims that are present must be numbers; anything else means the answer cannot be trusted. */
function validTimes(answer: Record<string, unknown>): boolean {
  return ['exp', 'nbf', 'iat'].every((c) => answer[c] === undefined || (typeof answer[c] === 'number' && Number.isFinite(answer[c])));
}

function formEncode(value: string): string {
  return new URLSearchParams([['v', value]]).toString().slice(2);
}
