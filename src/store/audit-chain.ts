// The audit log's hash chain: each record carries the SHA-256 of the one before it and its own, over its
// canonical JSON, so an edited, inserted or deleted record breaks the chain from that point on. Both
// stores chain records with these functions, and `gatehouse audit verify` checks them with the same.

import { createHash } from 'node:crypto';
import { canonicalJson } from '../protocol/canonical-json.js';
import type { AuditAnchor, AuditEntry, AuditRecord } from './store.js';

/** The `prev` of the very first record. */
export const GENESIS = '0'.repeat(64);

/** The hash of a record: over its canonical JSON, `prev` and `seq` included, `hash` left out. */
export function auditHash(record: Omit<AuditRecord, 'hash'>): string {
  return createHash('sha256').update(canonicalJson(record)).digest('hex');
}

/** The next record of a chain whose last record is `head`. */
export function chainNext(entry: AuditEntry, head: AuditAnchor | undefined): AuditRecord {
  const unhashed = { ...entry, seq: (head?.seq ?? 0) + 1, prev: head?.hash ?? GENESIS };
  return { ...unhashed, hash: auditHash(unhashed) };
}

export type ChainVerdict = { ok: true; records: number; lastSeq: number } | { ok: false; seq: number; reason: string; records: number };

/**
 * Walks records in `seq` order from `anchor` (or the start): each must follow the one before without a
 * gap, name its hash as `prev`, and hash to its own `hash`. The first record that does not is named.
 */
export function verifyChain(records: Iterable<AuditRecord>, anchor: AuditAnchor | undefined): ChainVerdict {
  let expectedSeq = (anchor?.seq ?? 0) + 1;
  let prev = anchor?.hash ?? GENESIS;
  let count = 0;
  for (const r of records) {
    if (r.seq !== expectedSeq) return { ok: false, seq: r.seq, reason: r.seq > expectedSeq ? `records ${expectedSeq}–${r.seq - 1} are missing` : `record ${r.seq} is out of order or repeated`, records: count };
    if (r.prev !== prev) return { ok: false, seq: r.seq, reason: 'its prev does not match the hash of the record before it (a record before it was edited, inserted or removed)', records: count };
    const { hash, ...rest } = r;
    if (auditHash(rest) !== hash) return { ok: false, seq: r.seq, reason: 'its content does not match its hash (the record was edited)', records: count };
    prev = hash;
    expectedSeq++;
    count++;
  }
  return { ok: true, records: count, lastSeq: expectedSeq - 1 };
}
