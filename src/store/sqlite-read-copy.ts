// A reader's way into a SQLite store it cannot open where it is: a copy at rest on read-only media (a
// forensic copy, a snapshot mounted read-only, a directory this user may only read). The store is in WAL
// mode, and SQLite reads a WAL database only through its -shm index, which it must create beside the file
// when it is not there: in a directory it may not write, every read failed (SQLITE_READONLY_DIRECTORY, or
// SQLITE_CANTOPEN with a -wal and no -shm), and `gatehouse audit verify` could not check the copy. Its
// files are read from a private copy in a temporary directory instead (the -wal too, so records not yet
// checkpointed into the file are read); nothing is written beside the original. Readers only (the CLI's
// `audit` and `budgets`, SqliteStoreOptions.existing): the gateway never opens a store it cannot write.

import { accessSync, constants, copyFileSync, existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Whether SQLite cannot read the store at `path` in place: its directory takes no new file (the -shm), and
 * no -shm is there to read (a running gateway keeps one beside its file, which a reader without write
 * access may read in place, seeing the records written after it opened).
 */
export function needsPrivateCopy(path: string): boolean {
  try {
    accessSync(dirname(path), constants.W_OK);
    return false;
  } catch {
    return !existsSync(`${path}-shm`);
  }
}

/** Copies the store at `path` (and its -wal, if any) into `dir`; returns the copy's path, to open instead. */
export function copyForReading(path: string, dir: string): string {
  const copy = join(dir, basename(path));
  copyFileSync(path, copy);
  if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${copy}-wal`);
  return copy;
}
