// The headers an HTTP upstream authenticates Gatehouse with. The client's own Authorization never goes up
// (2026-07-28 security best practices, "Token Passthrough"), so every upstream carries its own: static
// configured headers, or a token from an OAuth 2.1 client-credentials grant at the upstream's authorization
// server, cached and renewed before it expires. Without a token nothing is sent: the call fails closed.

import { request } from 'undici';
import type { ClientCredentialsConfig, HttpUpstreamConfig } from '../config/types.js';
import { GatewayError, type GatewayErrorCode } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { toGatewayError } from './failures.js';

/** Headers to add to an upstream request; one object per token, never mutated, so callers may keep it. */
export type CredentialHeaders = Readonly<Record<string, string>>;

export interface UpstreamCredentials {
  /**
   * The headers for a request sent now, without waiting: the hot path. Undefined only when a token must be
   * fetched first; then await `headers()`.
   */
  current(): CredentialHeaders | undefined;
  /** The headers once a usable token is at hand; rejects with a GatewayError when none can be had. */
  headers(): Promise<CredentialHeaders>;
  /**
   * The upstream answered 401 to a request sent with `used`: drop that token, so the next call fetches a
   * new one. A token already replaced meanwhile is left alone.
   */
  invalidate(used: CredentialHeaders): void;
  /** Abandons a token fetch still running (the upstream is closing). */
  close(): void;
}

/** The upstream's credentials from its config; `log` is the upstream's own logger. */
export function upstreamCredentials(config: HttpUpstreamConfig, log: Logger): UpstreamCredentials {
  const configured = lowerCaseKeys(config.headers);
  if (!config.clientCredentials) return new StaticCredentials(configured);
  return new ClientCredentialsGrant(config.name, config.clientCredentials, config.clientCredentials.resource ?? canonicalUri(config.url), configured, log);
}

/**
 * The canonical URI of an MCP server (2026-07-28 authorization §Canonical Server URI; RFC 8707 §2):
 * lower-case scheme and host, no fragment, no trailing slash on a bare origin.
 */
export function canonicalUri(url: string): string {
  const u = new URL(url);
  u.hash = '';
  return u.pathname === '/' && u.search === '' ? u.href.slice(0, -1) : u.href;
}

class StaticCredentials implements UpstreamCredentials {
  private readonly fixed: CredentialHeaders;
  private readonly ready: Promise<CredentialHeaders>;

  constructor(headers: Record<string, string>) {
    this.fixed = Object.freeze(headers);
    this.ready = Promise.resolve(this.fixed);
  }

  current(): CredentialHeaders {
    return this.fixed;
  }

  headers(): Promise<CredentialHeaders> {
    return this.ready;
  }

  invalidate(): void {
    // Static headers cannot be renewed; the operator has to fix them.
  }

  close(): void {}
}

/** Bounds the whole token request: a caller may be waiting on it. */
const TOKEN_TIMEOUT_MS = 5_000;
/** A token response larger than this is not a token response. */
const TOKEN_BODY_LIMIT = 64 * 1024;
/** Lifetime assumed when the server omits expires_in (RFC 6749 §5.1 only recommends it); a 401 cuts it short. */
const DEFAULT_LIFETIME_S = 300;
/** After a failed fetch, calls fail at once for this long instead of each hitting a struggling server. */
const FAILURE_HOLD_MS = 1_000;

interface Token {
  headers: CredentialHeaders;
  /** performance.now() values: a monotonic clock, so wall-clock steps cannot stretch a token's life. */
  renewAt: number;
  expiresAt: number;
}

class ClientCredentialsGrant implements UpstreamCredentials {
  private token?: Token;
  private inFlight?: Promise<CredentialHeaders>;
  private failure?: { error: GatewayError; until: number };
  private readonly closing = new AbortController();
  private readonly basic: string;
  private readonly form: string;

  constructor(
    private readonly upstream: string,
    private readonly config: ClientCredentialsConfig,
    /** The resource indicator sent with every token request; empty: none. */
    resource: string,
    private readonly configured: Record<string, string>,
    private readonly log: Logger,
  ) {
    if ('authorization' in configured) log.warn('upstream has both an Authorization header and clientCredentials; the client-credentials token is sent');
    // RFC 6749 §2.3.1: id and secret are form-encoded before they are joined for HTTP Basic.
    this.basic = `Basic ${Buffer.from(`${formEncode(config.clientId)}:${formEncode(config.clientSecret)}`).toString('base64')}`;
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (config.scopes.length > 0) form.set('scope', config.scopes.join(' '));
    if (resource !== '') form.set('resource', resource); // RFC 8707 §2
    this.form = form.toString();
  }

  current(): CredentialHeaders | undefined {
    const token = this.token;
    if (token === undefined) return undefined;
    const now = performance.now();
    if (now < token.renewAt) return token.headers;
    if (now >= token.expiresAt) return undefined;
    // In the renewal window: this call still goes with the old token while a new one is fetched.
    if (this.inFlight === undefined && !this.holding(now)) this.fetch().catch(() => {});
    return token.headers;
  }

  headers(): Promise<CredentialHeaders> {
    const ready = this.current();
    if (ready !== undefined) return Promise.resolve(ready);
    const failure = this.failure;
    if (failure !== undefined && performance.now() < failure.until) return Promise.reject(failure.error);
    return this.fetch();
  }

  invalidate(used: CredentialHeaders): void {
    if (this.token?.headers !== used) return;
    this.token = undefined;
    this.log.warn('upstream refused its access token; a new one is fetched for the next call');
  }

  close(): void {
    this.closing.abort();
  }

  private holding(now: number): boolean {
    return this.failure !== undefined && now < this.failure.until;
  }

  /** One fetch at a time: every caller that needs a token meanwhile shares it. */
  private fetch(): Promise<CredentialHeaders> {
    this.inFlight ??= this.fetchToken().then(
      (token) => {
        this.inFlight = undefined;
        this.failure = undefined;
        this.token = token;
        return token.headers;
      },
      (err: unknown) => {
        this.inFlight = undefined;
        const error = toGatewayError(err, this.upstream);
        this.failure = { error, until: performance.now() + FAILURE_HOLD_MS };
        this.log.error('could not get an access token for the upstream', { code: error.code, err: error.cause ?? error.message });
        throw error;
      },
    );
    return this.inFlight;
  }

  private async fetchToken(): Promise<Token> {
    // The lifetime counts from before the request: the token cannot have been issued earlier than that.
    const sentAt = performance.now();
    let status: number;
    let text: string | undefined;
    try {
      const res = await request(this.config.tokenUrl, {
        method: 'POST',
        headers: { authorization: this.basic, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: this.form,
        headersTimeout: TOKEN_TIMEOUT_MS,
        bodyTimeout: TOKEN_TIMEOUT_MS,
        signal: AbortSignal.any([this.closing.signal, AbortSignal.timeout(TOKEN_TIMEOUT_MS)]),
      });
      status = res.statusCode;
      text = await readBounded(res.body);
    } catch (err) {
      throw this.transportFailure(err);
    }
    if (text === undefined) throw this.failed('GW_ERR_UPSTREAM_BAD_RESPONSE', 'token response too large');
    if (status !== 200) {
      // Only the RFC 6749 §5.2 error code is kept: a description is free text from another system.
      const oauthError = errorCodeOf(text);
      const detail = `token endpoint answered HTTP ${status}${oauthError !== undefined ? ` ${oauthError}` : ''}`;
      throw this.failed(status >= 500 || status === 429 ? 'GW_ERR_UPSTREAM_UNREACHABLE' : 'GW_ERR_UPSTREAM_BAD_RESPONSE', detail);
    }
    const parsed = parseTokenResponse(text);
    if (typeof parsed === 'string') throw this.failed('GW_ERR_UPSTREAM_BAD_RESPONSE', parsed);
    const lifetimeMs = parsed.expiresIn * 1000;
    // Renew refreshBeforeSeconds ahead, but not before half the lifetime: short-lived tokens would
    // otherwise be renewed on every call.
    const renewInMs = Math.max(lifetimeMs - this.config.refreshBeforeSeconds * 1000, lifetimeMs / 2);
    this.log.info('obtained an access token for the upstream', { expiresInSeconds: parsed.expiresIn });
    return {
      headers: Object.freeze({ ...this.configured, authorization: `Bearer ${parsed.accessToken}` }),
      renewAt: sentAt + renewInMs,
      expiresAt: sentAt + lifetimeMs,
    };
  }

  private failed(code: GatewayErrorCode, detail: string, cause?: unknown): GatewayError {
    return new GatewayError(code, `Upstream "${this.upstream}" was not called: Gatehouse could not get its access token (${detail})`, this.upstream, cause !== undefined ? { cause } : undefined);
  }

  private transportFailure(err: unknown): GatewayError {
    if (this.closing.signal.aborted) return new GatewayError('GW_ERR_SHUTTING_DOWN', 'Gatehouse is shutting down', this.upstream, { cause: err });
    if ((err as { name?: unknown } | undefined)?.name === 'TimeoutError' || toGatewayError(err, this.upstream).code === 'GW_ERR_UPSTREAM_TIMEOUT') {
      return this.failed('GW_ERR_UPSTREAM_TIMEOUT', 'token endpoint did not answer in time', err);
    }
    const code = (err as { code?: unknown } | undefined)?.code;
    return this.failed('GW_ERR_UPSTREAM_UNREACHABLE', `token endpoint unreachable${typeof code === 'string' ? `: ${code}` : ''}`, err);
  }
}

interface TokenResponse {
  accessToken: string;
  expiresIn: number;
}

/** RFC 6749 §5.1, with RFC 6750 Bearer the only usable type; a string is what was wrong with it. */
function parseTokenResponse(text: string): TokenResponse | string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'token response is not JSON';
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'token response is not a JSON object';
  const { access_token: accessToken, token_type: tokenType, expires_in: expiresIn } = body as Record<string, unknown>;
  // Visible ASCII only: the token becomes a header value, and must not be able to break out of it.
  if (typeof accessToken !== 'string' || !/^[\x21-\x7e]+$/.test(accessToken)) return 'token response has no usable access_token';
  if (typeof tokenType !== 'string' || tokenType.toLowerCase() !== 'bearer') return `token_type ${JSON.stringify(String(tokenType).slice(0, 32))} is not Bearer`;
  if (expiresIn === undefined) return { accessToken, expiresIn: DEFAULT_LIFETIME_S };
  // Some servers send the number as a string; anything else is a broken response, not a default.
  const seconds = typeof expiresIn === 'string' && /^\d+$/.test(expiresIn) ? Number(expiresIn) : expiresIn;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) return 'token response has an invalid expires_in';
  return { accessToken, expiresIn: seconds };
}

function errorCodeOf(text: string): string | undefined {
  try {
    const error = (JSON.parse(text) as { error?: unknown } | null)?.error;
    // RFC 6749 §5.2: the error code is a short ASCII token without quotes or backslashes.
    return typeof error === 'string' && /^[\x20\x21\x23-\x5b\x5d-\x7e]{1,64}$/.test(error) ? error : undefined;
  } catch {
    return undefined;
  }
}

/** The body as text; undefined when it is larger than any token response. */
async function readBounded(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > TOKEN_BODY_LIMIT) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** application/x-www-form-urlencoded, as RFC 6749 Appendix B asks (space as "+", unlike encodeURIComponent). */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}

function lowerCaseKeys(h: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) out[k.toLowerCase()] = v;
  return out;
}
