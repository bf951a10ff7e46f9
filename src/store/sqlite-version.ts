// The SQLite store's format, kept in the file's header as PRAGMA user_version (sqlite.org/pragma.html
// #pragma_user_version; bytes 60–63 of the header, sqlite.org/fileformat.html §1.3.14). A store is stamped
// when this Gatehouse makes or first opens it; one stamped by a newer Gatehouse is refused, not read or
// written as if its tables and records meant what they mean here.

/**
 * The format this Gatehouse writes and reads. 0 is a store made before the stamp existed, which is this
 * format (the tables as sqlite-worker.ts's SCHEMA makes them). Raise it with each change older versions
 * cannot read, and migrate the stores below it where the schema is made.
 */
export const STORE_VERSION = 1;

/** Where the header keeps user_version (a big-endian 32-bit integer). */
const USER_VERSION_OFFSET = 60;
/** How much of the header to read for it. */
export const HEADER_BYTES = USER_VERSION_OFFSET + 4;

/** The user_version a database file's header holds (the first HEADER_BYTES bytes of the file). */
export function headerVersion(header: Buffer): number {
  return header.readInt32BE(USER_VERSION_OFFSET);
}

/** Why a store stamped `found` is refused, or undefined when this Gatehouse reads it. */
export function refusedVersion(path: string, found: number): string | undefined {
  if (found <= STORE_VERSION) return undefined;
  return `${path} was written by a newer Gatehouse (store format ${found}; this one reads up to ${STORE_VERSION}): it was not read, nor changed; run the Gatehouse that wrote it, or give this one a store of its own`;
}
