// A JWT is only as trustworthy as the key that signed it, and the issuer rotates those keys. This cache
// keeps the issuer's published signing keys so that verifying a token costs no network round trip,
// finds a newly published kid without a restart, and still cannot be turned into a traffic amplifier:
// anyone can mint tokens with made-up kids, so a miss refetches at most once per interval and every
// concurrent miss waits on that same fetch. An outage is reported as such, never as a bad token, so the
// edge can fail closed with a retryable answer instead of telling a valid client its token is wrong.

import { isLoopback } from '../net/loopback.js';
import { wireTable } from '../protocol/own-keys.js';
import type { CryptoKey, JWK } from 'jose';
import { loadJose } from './jose.js';
import { LRUCache } from 'lru-cache';
import { Agent, request } from 'undici';
import type { Logger } from '../log/logger.js';

/** The key set (or the issuer metadata naming it) could not be fetched: the token cannot be judged now. */
export class KeySetUnavailableError extends Error {
  override readonly name = 'KeySetUnavailableError';
}

/** No published key fits the token's kid (or, without a kid, no key fits its alg). */
export class UnknownKeyError extends Error {
  override readonly name = 'UnknownKeyError';
}

/** An HTTP exchange with the authorization server failed; the message names the URL, never a credential. */
export class EndpointError extends Error {
  override readonly name = 'EndpointError';
}

export interface JwksCacheOptions {
  issuer: string;
  jwksUri?: string;
  /** Asymmetric JWS algorithms the verifier accepts; keys fitting none of them are skipped. */
  algorithms: readonly string[];
  maxAgeSeconds: number;
  minRefreshSeconds: number;
}

/** Bounds for every call to the authorization server: it is outside our control and may hang or flood. */
export interface HttpLimits {
  timeoutMs: number;
  maxBytes: number;
}

const JWKS_LIMITS: HttpLimits = { timeoutMs: 10_000, maxBytes: 1024 * 1024 };
const MAX_KEYS = 256;

/** Which JWK shape each JWS algorithm needs; anything else cannot verify that algorithm. */
const KEY_SHAPES: Readonly<Record<string, { kty: string; crv?: string }>> = wireTable({
  RS256: { kty: 'RSA' },
  RS384: { kty: 'RSA' },
  RS512: { kty: 'RSA' },
  PS256: { kty: 'RSA' },
  PS384: { kty: 'RSA' },
  PS512: { kty: 'RSA' },
  ES256: { kty: 'EC', crv: 'P-256' },
  ES384: { kty: 'EC', crv: 'P-384' },
  ES512: { kty: 'EC', crv: 'P-521' },
  EdDSA: { kty: 'OKP', crv: 'Ed25519' },
  Ed25519: { kty: 'OKP', crv: 'Ed25519' },
});

/** Whether an algorithm is one this gateway can verify with a published public key at all. */
export function isAsymmetricAlg(alg: string): boolean {
  return Object.hasOwn(KEY_SHAPES, alg);
}

/** One published key, imported once per algorithm it may verify (RS256 and PS256 need distinct imports). */
interface SigningKey {
  readonly byAlg: ReadonlyMap<string, CryptoKey>;
}

/** An undici dispatcher with connect/header/body timeouts, so a stalled server cannot pin a request. */
export function boundedAgent(limits: HttpLimits): Agent {
  return new Agent({ connect: { timeout: limits.timeoutMs }, headersTimeout: limits.timeoutMs, bodyTimeout: limits.timeoutMs, connections: 4 });
}

/**
 * One JSON exchange with the authorization server: no redirects (undici's request follows none), a 200
 * or nothing, the body cut off past `maxBytes`. Every failure is an EndpointError.
 */
export async function requestJson(
  dispatcher: Agent,
  url: string,
  init: { method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string },
  limits: HttpLimits,
): Promise<unknown> {
  const where = redact(url);
  let res;
  try {
    res = await request(url, {
      dispatcher,
      method: init.method,
      headers: { accept: 'application/json', ...init.headers },
      ...(init.body !== undefined ? { body: init.body } : {}),
      signal: AbortSignal.timeout(limits.timeoutMs),
    });
  } catch (err) {
    throw new EndpointError(`${where}: ${describe(err)}`, { cause: err });
  }
  if (res.statusCode !== 200) {
    await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    throw new EndpointError(`${where}: HTTP ${res.statusCode}`);
  }
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > limits.maxBytes) {
    res.body.destroy();
    throw new EndpointError(`${where}: body larger than ${limits.maxBytes} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      const buf = chunk as Buffer;
      size += buf.length;
      if (size > limits.maxBytes) {
        res.body.destroy();
        throw new EndpointError(`${where}: body larger than ${limits.maxBytes} bytes`);
      }
      chunks.push(buf);
    }
  } catch (err) {
    if (err instanceof EndpointError) throw err;
    throw new EndpointError(`${where}: ${describe(err)}`, { cause: err });
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new EndpointError(`${where}: body is not JSON`);
  }
}

/** A URL fit for logs: configured URLs may carry credentials in userinfo or the query. */
function redact(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return 'invalid URL';
  }
}

/** A URL as configured, so a trailing slash shows; redacted when it carries userinfo, a query or a fragment. */
function asWritten(url: string): string {
  try {
    const u = new URL(url);
    return u.username || u.password || u.search || u.hash ? redact(url) : url;
  } catch {
    return 'invalid URL';
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message || err.name : 'request failed';
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Whether a discovered `jwks_uri` may be fetched: https, or plain http only when both it and the issuer are
 * on loopback (development). Configured `jwksUri` values are the operator's choice and are not judged.
 */
export function acceptableJwksUri(jwksUri: string, issuer: string): boolean {
  let target: URL;
  let origin: URL;
  try {
    target = new URL(jwksUri);
    origin = new URL(issuer);
  } catch {
    return false;
  }
  if (target.protocol === 'https:') return true;
  return target.protocol === 'http:' && isLoopback(target.hostname) && isLoopback(origin.hostname);
}

/**
 * The issuer's own metadata document, from the first well-known location that has it. A document naming
 * another issuer is skipped (RFC 8414 §3.3, mix-up defence); none at all is an EndpointError saying what
 * each location answered. That error is all the warning about a failed key-set fetch shows, so it must tell
 * an unreachable issuer from a mistyped one or one written with a trailing slash its metadata lacks: until
 * 4 December it said only "issuer metadata not found", the reasons logged at debug level.
 */
export async function fetchIssuerMetadata(agent: Agent, issuer: string, log: Logger): Promise<{ url: string; doc: Record<string, unknown> }> {
  const reasons: string[] = [];
  for (const url of metadataUrls(issuer)) {
    let doc: unknown;
    try {
      doc = await requestJson(agent, url, { method: 'GET' }, JWKS_LIMITS);
    } catch (err) {
      log.debug('issuer metadata not found here', { url, error: err });
      reasons.push(describe(err));
      continue;
    }
    if (!isRecord(doc) || doc.issuer !== issuer) {
      // The named issuer is the server's own public value, cut: it is shown to tell a near miss from a mix-up.
      const named = isRecord(doc) && typeof doc.issuer === 'string' ? doc.issuer.slice(0, 200) : undefined;
      log.warn('issuer metadata names another issuer; ignored', { url, configured: issuer, named: named ?? null });
      reasons.push(`${redact(url)}: ${named === undefined ? 'names no issuer' : `names the issuer ${named}, not ${asWritten(issuer)}`}`);
      continue;
    }
    return { url, doc };
  }
  throw new EndpointError(`issuer metadata not found for ${asWritten(issuer)} (${reasons.join('; ')})`);
}

/**
 * Where the issuer's metadata may live (RFC 8414 §3.1 inserts the well-known segment before the path;
 * OpenID Connect Discovery appends it, and many deployments do either).
 */
export function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/+$/, '');
  const origin = url.origin;
  if (path === '') return [`${origin}/.well-known/oauth-authorization-server`, `${origin}/.well-known/openid-configuration`];
  return [
    `${origin}/.well-known/oauth-authorization-server${path}`,
    `${origin}/.well-known/openid-configuration${path}`,
    `${origin}${path}/.well-known/openid-configuration`,
  ];
}

export class JwksCache {
  private readonly opts: JwksCacheOptions;
  private readonly log: Logger;
  private readonly agent = boundedAgent(JWKS_LIMITS);
  /** Published keys by kid: usually one each, but a set may name two keys alike (each is tried). */
  private readonly keys = new LRUCache<string, SigningKey[]>({ max: MAX_KEYS });
  /** Keys published without a kid; only a token without a kid can use them. */
  private unnamed: SigningKey[] = [];
  private jwksUri: string | undefined;
  /** performance.now() of the last good fetch, undefined before the first. */
  private fetchedAt: number | undefined;
  /** performance.now() of the last fetch attempt, good or bad: the flood and outage limiter. */
  private attemptedAt: number | undefined;
  private lastError: KeySetUnavailableError | undefined;
  private inFlight: Promise<void> | undefined;
  /** How many times the key set document was requested; for health and tests. */
  fetchCount = 0;

  constructor(opts: JwksCacheOptions, log: Logger) {
    this.opts = opts;
    this.log = log;
    this.jwksUri = opts.jwksUri;
  }

  /**
   * The keys that may verify a token with this header, at least one: more when the set publishes the kid
   * more than once, or the token names no kid and several keys fit its alg (a rotation's old and new key);
   * then the token's signature says which (if any) signed it. Throws
   * UnknownKeyError when no published key fits (after a refetch, if the interval allows one) and
   * KeySetUnavailableError when the set cannot be had.
   */
  async getKeys(kid: string | undefined, alg: string): Promise<[CryptoKey, ...CryptoKey[]]> {
    if (this.fetchedAt === undefined || performance.now() - this.fetchedAt >= this.opts.maxAgeSeconds * 1000) {
      await this.refresh(true);
    }
    const found = this.lookup(kid, alg);
    if (found) return found;
    await this.refresh(false);
    const again = this.lookup(kid, alg);
    if (again) return again;
    throw new UnknownKeyError(kid === undefined ? 'no published key fits the token' : 'no published key has the token kid');
  }

  close(): void {
    void this.agent.close().catch(() => undefined);
  }

  private lookup(kid: string | undefined, alg: string): [CryptoKey, ...CryptoKey[]] | undefined {
    const fitting = (keys: readonly SigningKey[]): CryptoKey[] => keys.map((k) => k.byAlg.get(alg)).filter((k): k is CryptoKey => k !== undefined);
    if (kid !== undefined) {
      const named = fitting(this.keys.get(kid) ?? []);
      return named.length > 0 ? (named as [CryptoKey, ...CryptoKey[]]) : undefined;
    }
    // Without a kid every key fitting the alg is a candidate, as jose's own key-set resolver has it. Until
    // 4 December only a lone fitting key was used: through every rotation overlap of an issuer that sends no
    // kid, each of its tokens was refused as signed by an unknown key.
    const all = fitting([...[...this.keys.values()].flat(), ...this.unnamed]);
    return all.length > 0 ? (all as [CryptoKey, ...CryptoKey[]]) : undefined;
  }

  /**
   * Fetches the set again unless one fetch is already running (then waits on it) or the last attempt is
   * younger than the refresh interval. A stale set (`required`) that cannot be refreshed is unusable.
   */
  private async refresh(required: boolean): Promise<void> {
    if (this.inFlight) return this.inFlight;
    const now = performance.now();
    if (this.attemptedAt !== undefined && now - this.attemptedAt < this.opts.minRefreshSeconds * 1000) {
      if (required && this.lastError) throw this.lastError;
      if (required && this.fetchedAt === undefined) throw new KeySetUnavailableError('signing keys are unavailable');
      // The interval paces fetches for unknown key ids. A set past jwksMaxAgeSeconds whose last fetch
      // worked is fetched again whatever the interval: its keys are no longer trusted (a max age below the
      // interval once kept a withdrawn key trusted until the interval ran out).
      if (!required) return;
    }
    this.attemptedAt = now;
    this.inFlight = this.fetchKeys().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async fetchKeys(): Promise<void> {
    try {
      const uri = this.jwksUri ?? (await this.discover());
      this.fetchCount++;
      const doc = await requestJson(this.agent, uri, { method: 'GET' }, JWKS_LIMITS);
      if (!isRecord(doc) || !Array.isArray(doc.keys)) throw new EndpointError(`${redact(uri)}: not a JWK set`);
      await this.replaceKeys(doc.keys);
      this.fetchedAt = performance.now();
      this.lastError = undefined;
    } catch (err) {
      this.log.warn('signing key set fetch failed', { error: err });
      // Old keys past their age are not trusted: the set may have been rotated because one leaked.
      if (this.fetchedAt === undefined || performance.now() - this.fetchedAt >= this.opts.maxAgeSeconds * 1000) {
        this.keys.clear();
        this.unnamed = [];
      }
      this.lastError = new KeySetUnavailableError('signing keys are unavailable');
      throw this.lastError;
    }
  }

  private async discover(): Promise<string> {
    const { url, doc } = await fetchIssuerMetadata(this.agent, this.opts.issuer, this.log);
    if (typeof doc.jwks_uri !== 'string' || !/^https?:\/\//.test(doc.jwks_uri)) throw new EndpointError(`${url}: no usable jwks_uri`);
    if (!acceptableJwksUri(doc.jwks_uri, this.opts.issuer)) {
      // A URL learned from a network answer is an SSRF lever (2026-07-28 security best practices §SSRF).
      this.log.warn('issuer metadata names a key set URL Gatehouse will not fetch', { url });
      throw new EndpointError(`${url}: jwks_uri must be https (plain http only on loopback, for a loopback issuer)`);
    }
    this.jwksUri = doc.jwks_uri;
    this.log.info('signing key set discovered', { jwksUri: doc.jwks_uri });
    return doc.jwks_uri;
  }

  private async replaceKeys(published: unknown[]): Promise<void> {
    const named = new Map<string, SigningKey[]>();
    const unnamed: SigningKey[] = [];
    let count = 0;
    for (const jwk of published.slice(0, MAX_KEYS * 2)) {
      const key = await this.importKey(jwk);
      if (!key) continue;
      count++;
      const kid = (jwk as JWK).kid;
      // A kid published twice keeps both keys: keeping one (the later) refused every token the other signed,
      // and a token is verified by each key with its kid in turn, so neither is trusted for the other's tokens.
      if (typeof kid === 'string' && kid !== '') named.set(kid, [...(named.get(kid) ?? []), key]);
      else unnamed.push(key);
    }
    this.keys.clear();
    for (const [kid, keys] of named) {
      if (keys.length > 1) this.log.warn('the signing key set publishes a kid more than once; each key with it is tried', { kid, keys: keys.length });
      this.keys.set(kid, keys);
    }
    this.unnamed = unnamed;
    this.log.debug('signing key set loaded', { keys: count });
  }

  /** Imports a published key for every accepted algorithm it fits; undefined when it fits none. */
  private async importKey(raw: unknown): Promise<SigningKey | undefined> {
    if (!isRecord(raw) || typeof raw.kty !== 'string') return undefined;
    const jwk = raw as JWK;
    const kid = typeof jwk.kid === 'string' ? jwk.kid : undefined;
    if (jwk.use !== undefined && jwk.use !== 'sig') return undefined;
    if (Array.isArray(jwk.key_ops) && !jwk.key_ops.includes('verify')) return undefined;
    if ('d' in raw) {
      this.log.warn('published key carries private material; skipped', { kid });
      return undefined;
    }
    const candidates = jwk.alg !== undefined ? [jwk.alg] : this.opts.algorithms;
    const byAlg = new Map<string, CryptoKey>();
    for (const alg of candidates) {
      const shape = KEY_SHAPES[alg];
      if (!this.opts.algorithms.includes(alg) || !shape || shape.kty !== jwk.kty || (shape.crv !== undefined && shape.crv !== jwk.crv)) continue;
      try {
        const imported = await (await loadJose()).importJWK({ ...jwk, ext: false }, alg);
        if (imported instanceof Uint8Array) continue;
        byAlg.set(alg, imported);
      } catch (err) {
        this.log.warn('published key could not be imported; skipped', { kid, alg, error: err });
      }
    }
    return byAlg.size > 0 ? { byAlg } : undefined;
  }
}
