// A keyed table for long-lived owners whose entries come and go with the calls (one added as a call
// starts, removed as it ends). Used by the SQLite store for its requests awaiting the writer; the other
// per-call Maps and Sets of the request path (the audit's calls under way, the answers watched for their
// deadline) showed no measurable difference when moved to it, and were left as they are.
//
// Not a Map or a Set. Entries that come and go make a Map rehash its table every few dozen calls, and in
// V8 (Node 20) the table a Map or Set leaves behind, on a rehash or a `clear()`, keeps a link to the one
// that replaced it, and the entries it held, for iterators that may still walk it. Once one of those
// tables is old (the owner lived through two young collections), every later table and everything its
// entries reach stay reachable from the old generation until the next full collection: each young
// collection promotes them, and with them the whole call an entry reaches. A dictionary-mode object keeps
// no such link. Measured in bench/README.md §Pretenuring: the governed call promoted about 700 bytes per
// call through the store's Map of waiting requests, and about 110 with this table.

export type EntryKey = string | number;

export class EntryTable<V> {
  private byKey: Record<EntryKey, V> = Object.create(null) as Record<EntryKey, V>;
  private count = 0;

  get size(): number {
    return this.count;
  }

  has(key: EntryKey): boolean {
    return this.byKey[key] !== undefined;
  }

  get(key: EntryKey): V | undefined {
    return this.byKey[key];
  }

  /** `value` must not be undefined: an undefined entry is an absent one. */
  set(key: EntryKey, value: V): void {
    if (this.byKey[key] === undefined) this.count++;
    this.byKey[key] = value;
  }

  /** The entry for `key`, removed from the table. */
  take(key: EntryKey): V | undefined {
    const value = this.byKey[key];
    if (value === undefined) return undefined;
    delete this.byKey[key];
    this.count--;
    return value;
  }

  delete(key: EntryKey): boolean {
    return this.take(key) !== undefined;
  }

  /** The entries, in the order of an object's keys: integer keys ascending, then the rest as added. */
  values(): V[] {
    return Object.values(this.byKey);
  }

  /** Every entry (in `values()` order), the table left empty. */
  takeAll(): V[] {
    const all = Object.values(this.byKey);
    this.byKey = Object.create(null) as Record<EntryKey, V>;
    this.count = 0;
    return all;
  }
}
