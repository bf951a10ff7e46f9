// API key hashing: the config stores only `sha256:<hex>` of a key. Keys are long random strings, so a
// fast hash is enough (no dictionary to guess from). A presented key is found by its hash (api-keys.ts), so
// no comparison ever runs on the key itself.

import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../protocol/sha256.js';

export const KEY_PREFIX = 'gh_';

/**
 * RFC 6750 §2.1 b64token: all that `Authorization: Bearer <credential>`, the one place a credential is taken
 * from, can carry. The edge reads the header with it, and `hash-key` refuses a key outside it: such a key
 * could never be presented (the header is malformed, 400, a failed attempt of the client's address).
 */
export const B64TOKEN = '[A-Za-z0-9\\-._~+/]+=*';
const SENDABLE = new RegExp(`^${B64TOKEN}$`);

/** Whether a key can be sent as `Authorization: Bearer <key>`. */
export function sendableAsBearer(key: string): boolean {
  return SENDABLE.test(key);
}

/**
 * Whether a presented credential has the API key shape. One that is no configured key is a mistyped or
 * revoked key, still a secret: it is refused as such, never handed to the issuer (introspection is a third
 * party) nor tried as a token. Access tokens do not start so: a JWT starts `eyJ`.
 */
export function hasKeyShape(credential: string): boolean {
  return credential.startsWith(KEY_PREFIX);
}

export function hashKey(key: string): string {
  return 'sha256:' + sha256Hex(key);
}

/** A new key: 32 random bytes, base64url, with a prefix that secret scanners can recognise. */
export function generateKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}
