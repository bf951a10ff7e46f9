// API keys from config: only their hashes are stored, so a leaked config leaks no key. A presented key is
// hashed once and looked up; the lookup itself compares in constant time so timing says nothing about
// which stored hash was close.

import type { ApiKeyConfig } from '../config/types.js';
import { hashesMatch, hashKey } from './key-hash.js';
import type { AuthResult } from './auth-result.js';
import { expiryOf } from '../config/expiry.js';

interface StoredKey {
  config: ApiKeyConfig;
  /** Epoch ms after which the key is refused; Infinity when it never expires. */
  expiresAt: number;
}

export class ApiKeys {
  private readonly byHash = new Map<string, StoredKey>();

  constructor(keys: readonly ApiKeyConfig[]) {
    for (const k of keys) this.byHash.set(k.hash, { config: k, expiresAt: k.expires === undefined ? Infinity : expiryOf(k.expires) });
  }

  get size(): number {
    return this.byHash.size;
  }

  /** The key's principal, or undefined when the token is not one of ours (it may be an OAuth token). */
  verify(token: string, now = Date.now()): AuthResult | undefined {
    const hash = hashKey(token);
    const stored = this.byHash.get(hash);
    // The Map lookup finds the candidate; the constant-time compare is what decides.
    if (!stored || !hashesMatch(hash, stored.config.hash)) return undefined;
    const k = stored.config;
    if (k.disabled) return { ok: false, failure: { kind: 'invalid_token', reason: 'key_disabled', message: 'The API key is disabled' } };
    if (now >= stored.expiresAt) return { ok: false, failure: { kind: 'invalid_token', reason: 'key_expired', message: 'The API key has expired' } };
    return {
      ok: true,
      principal: {
        subject: `key:${k.id}`,
        ...(k.tenant !== undefined ? { tenant: k.tenant } : {}),
        scopes: k.scopes,
        groups: [],
        via: 'api_key',
        keyId: k.id,
        ...(k.tools !== undefined ? { toolGlobs: k.tools } : {}),
        ...(Number.isFinite(stored.expiresAt) ? { expiresAt: stored.expiresAt } : {}),
      },
    };
  }
}
