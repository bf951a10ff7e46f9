// The key approvals digest a call's arguments with (HMAC-SHA256): random, made once and kept in the store,
// so every replica, and the gateway after a restart, derives the same binding and approval id for the same
// arguments. Reviewers see the digest, the ids and the redacted preview, never the key: a value redacted
// from the preview (a PIN, a one-time code) cannot be found by trying candidates against what they see, as
// it could against a plain SHA-256 of the arguments. It does not decide what is shown; approval.ts does.

import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { IdempotencyClaim } from '../store/store.js';

const KEY_ID = 'approvals-arguments-key';
/** As long as pins (ten years): a new key would leave every approval waiting unfound by its identical call. */
const KEY_TTL_MS = 10 * 365 * 86_400_000;
const HEX_KEY = /^[0-9a-f]{64}$/;

/** The store operation the key is made with: a claim, atomic across replicas (the first one's key stands). */
export interface KeyStore {
  claim(key: string, digest: string, owner: string, leaseMs: number, ttlMs: number): Promise<IdempotencyClaim>;
}

export class ArgumentsKey {
  /** Read once per process: the key never changes while its record lives. */
  private key: Promise<Buffer> | undefined;

  constructor(private readonly store: KeyStore) {}

  /** HMAC-SHA256 (hex) of `text`, the canonical JSON of a call's arguments, under this gateway's key. */
  async digest(text: string): Promise<string> {
    return createHmac('sha256', await this.load()).update(text).digest('hex');
  }

  private load(): Promise<Buffer> {
    // A store that fails is asked again by the next call (the call fails closed meanwhile).
    this.key ??= this.fetch().catch((err: unknown) => {
      this.key = undefined;
      throw err;
    });
    return this.key;
  }

  private async fetch(): Promise<Buffer> {
    const mine = randomBytes(32).toString('hex');
    // The claim's digest holds the key; a lease as long as its life, so nothing takes it for abandoned.
    const claim = await this.store.claim(KEY_ID, mine, randomUUID(), KEY_TTL_MS, KEY_TTL_MS);
    const key = claim.outcome === 'claimed' ? mine : claim.record.digest;
    if (!HEX_KEY.test(key)) throw new Error('the approvals arguments key in the store is not 32 bytes of hex');
    return Buffer.from(key, 'hex');
  }
}
