// Reads the files a config is made of, never past a limit: the config file and each `${file:PATH}` are
// input, and a path to a huge file (a log, a disk image, /dev/zero) must be refused before it is held
// whole in memory, not after. The size on disk is checked first; the read itself stops one byte past the
// limit, for files whose size stat does not tell (pipes, devices, a file still growing).

import { closeSync, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';

/** The most a config file may hold: far past any real one (the largest shipped example is a few KiB). */
export const CONFIG_FILE_MAX_BYTES = 4 * 1024 * 1024;
/**
 * The most one `${file:PATH}` may hold: twice the longest string the schema takes (a PEM chain, 1 MiB), so
 * that for a file of any real size the schema, located at its key, is what says it is too long.
 */
export const INTERPOLATED_FILE_MAX_BYTES = 2 * 1024 * 1024;

/** A file past its limit; `code` is EFBIG so callers can tell it from a read error by its code alone. */
export class FileTooLargeError extends Error {
  readonly code = 'EFBIG';
  readonly limit: number;
  constructor(path: string, limit: number) {
    super(`${path} is larger than ${describeBytes(limit)}`);
    this.name = 'FileTooLargeError';
    this.limit = limit;
  }
}

/** `4 MiB (4194304 bytes)`: the unit people think in, and the exact count a file size can be compared with. */
export function describeBytes(bytes: number): string {
  return `${bytes / (1024 * 1024)} MiB (${bytes} bytes)`;
}

/** The file's bytes, or a FileTooLargeError once it holds more than `limit`; other errors as fs gives them. */
export async function readFileBounded(path: string, limit: number): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const size = regularSize(await handle.stat());
    if (size > limit) throw new FileTooLargeError(path, limit);
    let buffer: Buffer = Buffer.alloc(readCapacity(size, limit));
    let length = 0;
    // Each read moves at least one byte or ends the loop, and the buffer holds at most limit + 1 bytes.
    // Position null reads on from where the last read stopped: a pipe or a device has no offsets.
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > limit) throw new FileTooLargeError(path, limit);
      if (length === buffer.length) buffer = grown(buffer, limit);
    }
    return buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}

/** As readFileBounded, synchronously (interpolation runs inside the synchronous parse). */
export function readFileBoundedSync(path: string, limit: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const size = regularSize(fstatSync(fd));
    if (size > limit) throw new FileTooLargeError(path, limit);
    let buffer: Buffer = Buffer.alloc(readCapacity(size, limit));
    let length = 0;
    for (;;) {
      const bytesRead = readSync(fd, buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > limit) throw new FileTooLargeError(path, limit);
      if (length === buffer.length) buffer = grown(buffer, limit);
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}

/**
 * The size of a regular file; 0 for anything else, whose stat size is not its content (a directory's is
 * its own table: reading it then fails EISDIR, as it should).
 */
function regularSize(stats: Stats): number {
  return stats.isFile() ? stats.size : 0;
}

/**
 * Room for what stat says plus one byte, so the read finds the end (or that the file grew since); a size
 * of 0 (pipes and devices report none) gets room for the whole limit plus one.
 */
function readCapacity(size: number, limit: number): number {
  return (size === 0 ? limit : size) + 1;
}

/** A file that grew past what stat said: room for the rest, up to one byte past the limit. */
function grown(buffer: Buffer, limit: number): Buffer {
  const next = Buffer.alloc(limit + 1);
  buffer.copy(next);
  return next;
}
