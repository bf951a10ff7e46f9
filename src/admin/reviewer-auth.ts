// Who is using the admin API: the admin token (a bearer, compared in constant time), a member of one of the
// configured OAuth groups (the access token verified as on the MCP endpoint), or a browser session opened
// on the inbox page with one of those. Browser sessions are cookies, so every request that changes
// something must also carry the session's CSRF token in a header, which another site cannot read or send.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Principal } from '../pipeline/principal.js';

export interface Reviewer {
  /** `admin-token`, or the OAuth subject. */
  subject: string;
  groups: readonly string[];
  /** The admin token may decide on everything; others only where a rule names them (or names no one). */
  admin: boolean;
}

export type AdminAuth =
  | {
      ok: true;
      reviewer: Reviewer;
      via: 'bearer' | 'session';
      csrf?: string;
      /** Epoch ms when the credential ends (an access token's exp); a session opened with it ends then too. */
      expiresAt?: number;
    }
  | { ok: false; status: 401 | 403 | 503; message: string };

/** `unavailable`: the token could not be judged now (the issuer's keys or introspection are down), not refused. */
export type VerifyToken = (headers: IncomingHttpHeaders) => Promise<{ ok: true; principal: Principal } | { ok: false; unavailable?: boolean }>;

export const SESSION_COOKIE = 'gatehouse_admin';
/** What a decision's `by` says of the admin token and of a caller's own elicitation answer; no reviewer is known by them. */
const RESERVED_SUBJECTS = new Set(['admin-token', 'user']);
const SESSION_MS = 8 * 3_600_000;
const MAX_SESSIONS = 1_000;

interface BrowserSession {
  reviewer: Reviewer;
  csrf: string;
  expiresAt: number;
}

export class ReviewerAuth {
  private tokenDigest: Buffer | undefined;
  private groups: readonly string[];
  private readonly sessions = new Map<string, BrowserSession>();

  constructor(
    token: string | undefined,
    groups: readonly string[],
    private readonly verify: VerifyToken | undefined,
  ) {
    this.tokenDigest = token === undefined ? undefined : digest(token);
    this.groups = groups;
  }

  /**
   * The token and groups of a reloaded config, from the next request on. When either changed, every
   * browser session ends: one opened with a token being rotated away must not outlive it, and a session's
   * groups were judged against the old list.
   */
  configure(token: string | undefined, groups: readonly string[]): void {
    const tokenDigest = token === undefined ? undefined : digest(token);
    const sameToken = tokenDigest === undefined ? this.tokenDigest === undefined : this.tokenDigest !== undefined && timingSafeEqual(tokenDigest, this.tokenDigest);
    const sameGroups = groups.length === this.groups.length && groups.every((g, i) => g === this.groups[i]);
    if (sameToken && sameGroups) return;
    this.tokenDigest = tokenDigest;
    this.groups = groups;
    this.sessions.clear();
  }

  /** Checks a bearer credential (the token, or an OAuth access token of an admin group). */
  async bearer(headers: IncomingHttpHeaders): Promise<AdminAuth> {
    const header = headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (match === null) return { ok: false, status: 401, message: 'The admin API needs a bearer credential: the admin token, or an access token of an admin group' };
    return this.credential(match[1]!, headers);
  }

  /** Checks a credential pasted on the login form. */
  async credential(value: string, headers: IncomingHttpHeaders = {}): Promise<AdminAuth> {
    if (this.tokenDigest !== undefined && timingSafeEqual(digest(value), this.tokenDigest)) return { ok: true, via: 'bearer', reviewer: { subject: 'admin-token', groups: [], admin: true } };
    if (this.groups.length > 0 && this.verify !== undefined) {
      const verdict = await this.verify({ ...headers, authorization: `Bearer ${value}` });
      // Not a refusal: answered as the MCP endpoint does, so a reviewer's retries in an outage are no guesses.
      if (!verdict.ok && verdict.unavailable === true) return { ok: false, status: 503, message: 'Access tokens cannot be verified now; retry shortly' };
      // Only an OAuth access token can name an admin group. Any other credential the MCP endpoint takes (an
      // API key) is as invalid here as a guess, and answered the same: a distinct answer told a guesser on
      // the admin port, where no failure limit applies, that it had found a working MCP credential.
      if (verdict.ok && (verdict.principal.via === 'jwt' || verdict.principal.via === 'introspection')) {
        const p = verdict.principal;
        if (!this.groups.some((g) => p.groups.includes(g))) return { ok: false, status: 403, message: 'This access token is valid, but its subject is in none of the admin groups' };
        // Decisions and accepted pins name who made them; these names say "the admin token" and "the caller's
        // own answer to an elicitation", so a reviewer whose subject is spelled so would pass for either.
        if (RESERVED_SUBJECTS.has(p.subject)) return { ok: false, status: 403, message: `This access token's subject "${p.subject}" is reserved: decisions name the admin token "admin-token" and an elicitation answer "user", so a reviewer cannot be known by it` };
        return { ok: true, via: 'bearer', reviewer: { subject: p.subject, groups: p.groups, admin: false }, ...(p.expiresAt !== undefined ? { expiresAt: p.expiresAt } : {}) };
      }
    }
    return { ok: false, status: 401, message: 'The admin credential is not valid' };
  }

  /** The browser session named by the cookie, if it is alive. */
  session(headers: IncomingHttpHeaders): AdminAuth | undefined {
    const id = cookie(headers.cookie, SESSION_COOKIE);
    if (id === undefined) return undefined;
    const s = this.sessions.get(id);
    if (s === undefined || s.expiresAt <= Date.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    return { ok: true, via: 'session', reviewer: s.reviewer, csrf: s.csrf };
  }

  /**
   * Opens a browser session; returns its cookie value and how many seconds it lives: SESSION_MS, or less when
   * the credential it was opened with ends sooner (`credentialExpiresAt`). A session made from an access token
   * once lived its 8 hours after the token expired, and so outlived a revocation or a removal from a group.
   */
  openSession(reviewer: Reviewer, credentialExpiresAt = Infinity): { id: string; seconds: number } {
    if (this.sessions.size >= MAX_SESSIONS) {
      const now = Date.now();
      for (const [id, s] of this.sessions) if (s.expiresAt <= now) this.sessions.delete(id);
      if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    }
    const id = randomBytes(32).toString('base64url');
    const now = Date.now();
    const expiresAt = Math.min(now + SESSION_MS, credentialExpiresAt);
    this.sessions.set(id, { reviewer, csrf: randomBytes(32).toString('base64url'), expiresAt });
    // The cookie goes no later than the session (rounded down, so never past it); 0 tells the browser to drop it.
    return { id, seconds: Math.max(0, Math.floor((expiresAt - now) / 1000)) };
  }

  closeSession(headers: IncomingHttpHeaders): void {
    const id = cookie(headers.cookie, SESSION_COOKIE);
    if (id !== undefined) this.sessions.delete(id);
  }

  /** Whether a cookie-authenticated request that changes something carries its session's CSRF token. */
  static csrfHolds(auth: AdminAuth & { ok: true }, headers: IncomingHttpHeaders): boolean {
    if (auth.via === 'bearer') return true;
    const sent = headers['x-csrf-token'];
    if (typeof sent !== 'string' || auth.csrf === undefined) return false;
    // Browsers say where a request comes from; a cross-site one is refused even with a token.
    const site = headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') return false;
    const a = digest(sent);
    return timingSafeEqual(a, digest(auth.csrf));
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function cookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
