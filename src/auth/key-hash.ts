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
 * Whether a presented credential has the shape of one of our API keys: it starts with gh_ (every key
 * `hash-key` makes) or with a prefix the config declares for keys of a custom shape (auth.apiKeyPrefixes).
 * One that is no configured key is a mistyped or revoked key, still a secret: it is refused as such, never
 * handed to the issuer (introspection is a third party) nor tried as a token. Config holds only hashes, so
 * without a declared prefix a custom key cannot be told from an opaque token. Access tokens do not start
 * so: a JWT starts `eyJ` (semantic-checks.ts refuses a prefix that every JWT has).
 */
export class KeyShape {
  private readonly prefixes: readonly string[];

  constructor(declared: readonly string[] = []) {
    this.prefixes = [KEY_PREFIX, ...declared.filter((p) => p !== KEY_PREFIX)];
  }

  matches(credential: string): boolean {
    for (const p of this.prefixes) if (credential.startsWith(p)) return true;
    return false;
  }
}

export function hashKey(key: string): string {
  return 'sha256:' + sha256Hex(key);
}

/** A new key: 32 random bytes, base64url, with a prefix that secret scanners can recognise. */
export function generateKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}
