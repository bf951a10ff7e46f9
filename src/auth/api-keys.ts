// API keys from config: only their hashes are stored, so a leaked config leaks no key. A presented key is
// hashed once and looked up by its hash: the lookup compares hashes, never the key, so its timing says
// nothing about the key.

import type { ApiKeyConfig } from '../config/types.js';
import type { Principal } from '../pipeline/principal.js';
import { hashKey } from './key-hash.js';
import type { AuthResult } from './auth-result.js';
import { expiryOf } from '../config/expiry.js';

interface StoredKey {
  config: ApiKeyConfig;
  /** Epoch ms after which the key is refused; Infinity when it never expires. */
  expiresAt: number;
  /** The key's verdict, made once: every call with the key shares it (nothing changes a principal). */
  accepted: AuthResult;
}

export class ApiKeys {
  private readonly byHash = new Map<string, StoredKey>();

  constructor(keys: readonly ApiKeyConfig[]) {
    for (const k of keys) {
      const expiresAt = k.expires === undefined ? Infinity : expiryOf(k.expires);
      this.byHash.set(k.hash, { config: k, expiresAt, accepted: { ok: true, principal: principalOf(k, expiresAt) } });
    }
  }

  get size(): number {
    return this.byHash.size;
  }

  /** The key's principal, or undefined when the token is not one of ours (it may be an OAuth token). */
  verify(token: string, now = Date.now()): AuthResult | undefined {
    const stored = this.byHash.get(hashKey(token));
    if (!stored) return undefined;
    if (stored.config.disabled) return { ok: false, failure: { kind: 'invalid_token', reason: 'key_disabled', message: 'The API key is disabled' } };
    if (now >= stored.expiresAt) return { ok: false, failure: { kind: 'invalid_token', reason: 'key_expired', message: 'The API key has expired' } };
    return stored.accepted;
  }
}

function principalOf(k: ApiKeyConfig, expiresAt: number): Principal {
  return Object.freeze({
    subject: `key:${k.id}`,
    ...(k.tenant !== undefined ? { tenant: k.tenant } : {}),
    scopes: k.scopes,
    groups: [],
    via: 'api_key',
    keyId: k.id,
    ...(k.tools !== undefined ? { toolGlobs: k.tools } : {}),
    ...(Number.isFinite(expiresAt) ? { expiresAt } : {}),
  } satisfies Principal);
}
