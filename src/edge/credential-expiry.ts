// A stream is one request: authenticated once, when it opens (2026-07-28 authorization §Token Handling), and
// then able to carry notifications for hours. Served no longer than its credential is accepted, it ends when
// the token or key expires (a token's exp plus the clock skew, Principal.expiresAt: ended at exp alone, a
// stream opened inside the skew ended at once and its client reconnected in a loop), and the client
// reconnects with a fresh one, as after any closed stream.

import type { Principal } from '../pipeline/principal.js';

/** Timers hold at most 2^31-1 ms (about 24 days): a credential valid for longer ends its stream then, early. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * Calls `end` once the principal's credential has expired (at once if it already has), unless the
 * returned function is called first; nothing happens for a credential without an expiry.
 */
export function atCredentialExpiry(principal: Principal, end: () => void): () => void {
  if (principal.expiresAt === undefined) return () => {};
  const ms = principal.expiresAt - Date.now();
  if (ms <= 0) {
    end();
    return () => {};
  }
  const timer = setTimeout(end, Math.min(ms, LONGEST_TIMER_MS)).unref();
  return () => clearTimeout(timer);
}
