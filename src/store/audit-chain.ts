// The audit log's hash chain: each record carries the SHA-256 of the one before it, and its own hash over
// that, its number and its entry's canonical JSON, so an edited, inserted or deleted record breaks the chain
// from that point on. Both stores chain records with these functions, and `gatehouse audit verify` checks
// them with the same. The entry's canonical JSON is made once, by the caller's thread; chaining it is a
// short hash and string work, which is all the store's writer does per record.

import { canonicalJson } from '../protocol/canonical-json.js';
import { sha256Hex } from '../protocol/sha256.js';
import type { AuditAnchor, AuditEntry, AuditRecord } from './store.js';

/** The `prev` of the very first record. */
export const GENESIS = '0'.repeat(64);

/** SHA-256 over the previous hash, the record's number and its entry's canonical JSON. */
function linkHash(prev: string, seq: number, entryJson: string): string {
  return sha256Hex(`${prev}\n${seq}\n${entryJson}`);
}

/** The hash a record should carry: over `prev`, `seq` and the canonical JSON of the rest of it. */
export function auditHash(record: Omit<AuditRecord, 'hash'>): string {
  const { seq, prev, ...entry } = record;
  return linkHash(prev, seq, canonicalJson(entry));
}

/**
 * Where the maker of an entry leaves its canonical JSON, made from parts it had at hand (auditEntryOf): a
 * symbol, not enumerable, so neither the JSON nor a copy made with `{ ...entry }` (which could then differ)
 * carries it.
 */
const ENTRY_JSON = Symbol('gatehouse.auditEntryJson');
type WithJson = AuditEntry & { [ENTRY_JSON]?: string };

/** Says what `entry`'s canonical JSON is, for the store that appends it; `json` must be canonicalJson(entry). */
export function knowEntryJson(entry: AuditEntry, json: string): void {
  Object.defineProperty(entry, ENTRY_JSON, { value: json });
}

/** The canonical JSON of an entry to append: the one its maker made, or made now. */
export function entryJson(entry: AuditEntry): string {
  return (entry as WithJson)[ENTRY_JSON] ?? canonicalJson(entry);
}

/** Every member an entry can have, in canonical (sorted) order: the compiler refuses a member left out. */
const ENTRY_KEYS = ['approvalId', 'arguments', 'argumentsSha256', 'callId', 'idempotencyKey', 'keyId', 'latencyMs', 'method', 'outcome', 'reason', 'refusal', 'reviewer', 'rule', 'run', 'runId', 'stage', 'subject', 'tenant', 'time', 'tokenId', 'tool', 'toolRef', 'upstream'] as const satisfies ReadonlyArray<keyof AuditEntry>;
const everyEntryKey: Exclude<keyof AuditEntry, (typeof ENTRY_KEYS)[number]> extends never ? true : never = true;
void everyEntryKey;
/** `"approvalId":` and so on: the members' names as they are written. */
const ENTRY_PREFIXES = ENTRY_KEYS.map((key) => `${JSON.stringify(key)}:`);

/**
 * A string JSON writes as it is, between quotes: no quote, backslash, control character or surrogate (a
 * surrogate pair is written as it is too, but a lone one is escaped; both are left to JSON.stringify).
 */
const WRITTEN_AS_IS = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

/** JSON.stringify(value) for a string or a number, without its call for the usual ids, names and times. */
function memberJson(value: unknown): string {
  if (typeof value === 'string' && WRITTEN_AS_IS.test(value)) return `"${value}"`;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return JSON.stringify(value);
}

/**
 * canonicalJson(entry), made from the arguments' canonical JSON when it is at hand: every other member is
 * a string or a number, whose JSON is its JSON.stringify (test/unit/audit: equal to canonicalJson
 * for entries of every shape). Made for every governed call: most members need no escaping, and are
 * written without JSON.stringify (a third of this function's time in a loop of bench-like entries).
 */
export function canonicalEntryJson(entry: AuditEntry, argumentsJson: string | undefined): string {
  let out = '{';
  for (let i = 0; i < ENTRY_KEYS.length; i++) {
    const key = ENTRY_KEYS[i]!;
    const value = entry[key];
    if (value === undefined) continue;
    if (out.length > 1) out += ',';
    out += ENTRY_PREFIXES[i]!;
    out += key === 'arguments' ? (argumentsJson ?? canonicalJson(value)) : typeof value === 'object' ? canonicalJson(value) : memberJson(value);
  }
  return `${out}}`;
}

/** A record ready to store: its place, its hash, and its JSON (the entry's canonical JSON behind seq, prev and hash). */
export interface ChainedRecord {
  seq: number;
  hash: string;
  json: string;
}

/** The next record of a chain whose last record is `head`, from the entry's canonical JSON. */
export function chainNext(entryJson: string, head: AuditAnchor | undefined): ChainedRecord {
  const seq = (head?.seq ?? 0) + 1;
  const prev = head?.hash ?? GENESIS;
  const hash = linkHash(prev, seq, entryJson);
  const rest = entryJson.length > 2 ? `,${entryJson.slice(1)}` : '}';
  return { seq, hash, json: `{"seq":${seq},"prev":"${prev}","hash":"${hash}"${rest}` };
}

/** The value of JSON text, or undefined for text that is no JSON (its parse error would quote it). */
function jsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * A stored record read back. Its text is whatever the file or the Redis key holds: someone who can write the
 * store can put there what is no record (not JSON, `null`, an object without its place in the chain), and the
 * error then names the record by where it is stored (`at`, its seq there) and quotes none of the text, which
 * could hold a terminal's escape sequences or an argument. JSON.parse's own error quoted it, and `null`
 * failed later with "Cannot read properties of null".
 */
export function storedAuditRecord(text: string, at: string): AuditRecord {
  const r = jsonOrUndefined(text) as Partial<AuditRecord> | null | undefined;
  if (typeof r !== 'object' || r === null || Array.isArray(r) || !Number.isSafeInteger(r.seq) || typeof r.prev !== 'string' || typeof r.hash !== 'string') {
    throw new Error(`audit record ${at} cannot be read: it is not an audit record (JSON with seq, prev and hash); its stored text was changed, so the chain cannot be checked past it`);
  }
  return r as AuditRecord;
}

/**
 * The stored anchor read back (the seq and hash of the last record retention removed), held to its shape as
 * a record is (storedAuditRecord): text that is not one fails the read, its text not quoted. `null` was
 * read as no anchor at all, and a seq of "x" judged the chain "from the anchor after record x".
 */
export function storedAuditAnchor(text: string): AuditAnchor {
  const a = jsonOrUndefined(text) as Partial<AuditAnchor> | null | undefined;
  if (typeof a !== 'object' || a === null || Array.isArray(a) || !Number.isSafeInteger(a.seq) || a.seq! < 0 || typeof a.hash !== 'string' || !/^[0-9a-f]{64}$/.test(a.hash)) {
    throw new Error('the audit anchor cannot be read: it is not an anchor (JSON with the seq and SHA-256 hash of the last record retention removed); its stored text was changed, so the chain cannot be checked');
  }
  return { seq: a.seq!, hash: a.hash };
}

export type ChainVerdict = { ok: true; records: number; lastSeq: number; lastHash: string } | { ok: false; seq: number; reason: string; records: number };

/**
 * Checks records one at a time, in `seq` order from `anchor` (or the start): each must follow the one
 * before without a gap, name its hash as `prev`, and hash to its own `hash`. Streaming, so a long log is
 * verified without holding it.
 */
export class ChainVerifier {
  private expectedSeq: number;
  private prev: string;
  private count = 0;
  private broken: { seq: number; reason: string } | undefined;

  constructor(anchor: AuditAnchor | undefined) {
    this.expectedSeq = (anchor?.seq ?? 0) + 1;
    this.prev = anchor?.hash ?? GENESIS;
  }

  /** The number the next record must have. */
  get nextSeq(): number {
    return this.expectedSeq;
  }

  /** False once a record breaks the chain; the verdict then names it. */
  add(r: AuditRecord): boolean {
    if (this.broken) return false;
    this.broken = this.fault(r);
    if (this.broken) return false;
    this.prev = r.hash;
    this.expectedSeq++;
    this.count++;
    return true;
  }

  verdict(): ChainVerdict {
    return this.broken ? { ok: false, ...this.broken, records: this.count } : { ok: true, records: this.count, lastSeq: this.expectedSeq - 1, lastHash: this.prev };
  }

  private fault(r: AuditRecord): { seq: number; reason: string } | undefined {
    const e = this.expectedSeq;
    if (r.seq !== e) return { seq: r.seq, reason: r.seq > e ? `records ${e}–${r.seq - 1} are missing` : `record ${r.seq} is out of order or repeated` };
    if (r.prev !== this.prev) return { seq: r.seq, reason: 'its prev does not match the hash of the record before it (a record before it was edited, inserted or removed)' };
    const { hash, ...rest } = r;
    if (auditHash(rest) !== hash) return { seq: r.seq, reason: 'its content does not match its hash (the record was edited)' };
    return undefined;
  }
}

/** The verdict on a whole chain: the first record that does not follow is named. */
export function verifyChain(records: Iterable<AuditRecord>, anchor: AuditAnchor | undefined): ChainVerdict {
  const v = new ChainVerifier(anchor);
  for (const r of records) if (!v.add(r)) break;
  return v.verdict();
}
