// What a file the config reads through `${file:PATH}` held, as one string: the digest of its bytes, or the
// reason it could not be read. The loader records it for each file as it reads it, and the watcher compares
// its own looks with that, so both must write it the same way: it is written here only.

import { createHash } from 'node:crypto';

/** The SHA-256 of `content`, in hex. */
export function contentDigest(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

/** A file that could not be read is a state like any other (a secret not mounted yet): its error code. */
export function unreadableDigest(err: unknown): string {
  return `unreadable: ${(err as NodeJS.ErrnoException).code ?? 'error'}`;
}
