// The `requestState` of an upstream's InputRequiredResult, sealed to the caller it was given to
// (2026-07-28/basic/patterns/mrtr.mdx §Server Requirements 4–5, §Security Considerations). The upstream
// cannot bind its state to the principal: Gatehouse calls it with its own credentials, so every caller
// looks the same to it. Gatehouse binds it instead, on the way out, and checks the binding on the retry:
// the caller, the method, the tool, prompt or resource, the arguments, and an expiry. The upstream's own
// string travels inside the seal unchanged and is handed back to it byte for byte.
//
//   gh1.<expiry, epoch seconds in base 36>.<HMAC-SHA256, base64url>.<the upstream's requestState>

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'gh1.';
/** base64url of a SHA-256 HMAC. */
const MAC_CHARS = 43;

/** What a requestState is bound to: the call it was issued on. */
export interface StateBinding {
  /** `principalKey` of the caller. */
  caller: string;
  method: string;
  /** The tool or prompt name, or the resource URI. */
  target: string;
  /** SHA-256 of the canonical arguments. */
  arguments: string;
}

export type Opened = { ok: true; state: string } | { ok: false; reason: 'not_sealed' | 'invalid' | 'expired' };

/**
 * The key every seal of this process is made with when the config names none (`sessions.requestStateKey`).
 * One per process, never per configuration: a reload must not void the states clients hold.
 */
let processKey: Buffer | undefined;

export class RequestStateSeal {
  private readonly key: Buffer;

  /**
   * `secret` is the configured key (shared by replicas behind one Service); without it a random key of this
   * process. Derived, so the same secret used for something else never signs the same bytes.
   */
  constructor(
    secret: string | undefined,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.key = secret === undefined ? (processKey ??= randomBytes(32)) : createHash('sha256').update('gatehouse requestState seal\u0000').update(secret).digest();
  }

  seal(state: string, binding: StateBinding): string {
    const expiry = Math.ceil((this.now() + this.ttlMs) / 1000).toString(36);
    return `${PREFIX}${expiry}.${this.mac(expiry, binding, state)}.${state}`;
  }

  /** The upstream's requestState inside `sealed`, if this gateway sealed it for this very call and it has not expired. */
  open(sealed: string, binding: StateBinding): Opened {
    if (!sealed.startsWith(PREFIX)) return { ok: false, reason: 'not_sealed' };
    const dot = sealed.indexOf('.', PREFIX.length);
    const macEnd = dot + 1 + MAC_CHARS;
    if (dot < 0 || sealed.charCodeAt(macEnd) !== 0x2e /* . */) return { ok: false, reason: 'not_sealed' };
    const expiry = sealed.slice(PREFIX.length, dot);
    const state = sealed.slice(macEnd + 1);
    const given = Buffer.from(sealed.slice(dot + 1, macEnd));
    const expected = Buffer.from(this.mac(expiry, binding, state));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'invalid' };
    // Checked after the MAC, so an expiry that is reported is one this gateway wrote.
    if (parseInt(expiry, 36) * 1000 < this.now()) return { ok: false, reason: 'expired' };
    return { ok: true, state };
  }

  private mac(expiry: string, b: StateBinding, state: string): string {
    // A JSON array keeps the fields apart whatever characters they hold.
    return createHmac('sha256', this.key).update(JSON.stringify([expiry, b.caller, b.method, b.target, b.arguments, state])).digest('base64url');
  }
}
