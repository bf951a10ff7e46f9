// API key hashing: the config stores only `sha256:<hex>` of a key. Keys are long random strings, so a
// fast hash is enough (no dictionary to guess from); comparison is constant-time.

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { sha256Hex } from '../protocol/sha256.js';

export const KEY_PREFIX = 'gh_';

export function hashKey(key: string): string {
  return 'sha256:' + sha256Hex(key);
}

/** A new key: 32 random bytes, base64url, with a prefix that secret scanners can recognise. */
export function generateKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function keyMatches(key: string, storedHash: string): boolean {
  return hashesMatch(hashKey(key), storedHash);
}

/** Two `sha256:<hex>` hashes compared in constant time (a key hashed once serves lookup and comparison). */
export function hashesMatch(hash: string, storedHash: string): boolean {
  const a = Buffer.from(hash);
  const b = Buffer.from(storedHash);
  return a.length === b.length && timingSafeEqual(a, b);
}
