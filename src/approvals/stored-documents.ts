// The store's documents as approvals and pins read them: parsed without throwing (a document that is not
// JSON is none of theirs), and walked a slice at a time for the reindexes each runs once per start. Both
// books walked the store alike; the walk is here once, so a bound on what one read holds is kept in one place.

/** One slice of the store's documents and the cursor of the next, undefined at the end (Store.scanApprovals). */
export type ScanSlice = (cursor: string | undefined, count: number) => Promise<{ docs: string[]; next: string | undefined }>;

/**
 * Documents read per slice: read whole, a reindex held every document in memory at once and, on SQLite,
 * kept the writer from answering calls while it read them all.
 */
const SCAN_SLICE = 500;

/** A stored document parsed; undefined when there is none or it is not JSON. */
export function parseStored(doc: string | undefined): unknown {
  if (doc === undefined) return undefined;
  try {
    return JSON.parse(doc) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Hands `each`, one after another, every stored document that `kind` recognises (parsed, and as stored),
 * reading the store a slice at a time to its end. Resolves with how many it handed: a document a scan
 * gives twice (as one may while the store changes) is counted twice.
 */
export async function eachStored<T>(scan: ScanSlice, kind: (doc: unknown) => doc is T, each: (found: T, doc: string) => Promise<void>): Promise<number> {
  let seen = 0;
  let cursor: string | undefined;
  do {
    const slice = await scan(cursor, SCAN_SLICE);
    for (const doc of slice.docs) {
      const found = parseStored(doc);
      if (!kind(found)) continue;
      await each(found, doc);
      seen++;
    }
    cursor = slice.next;
  } while (cursor !== undefined);
  return seen;
}
