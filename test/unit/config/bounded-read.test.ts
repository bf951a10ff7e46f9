// Unit tests for src/config/bounded-read.ts: a file is read whole up to its limit and refused one byte
// past it, whether stat tells its size (a regular file) or not (a device, which reports 0).

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FileTooLargeError, readFileBounded, readFileBoundedSync } from '../../../src/config/bounded-read.js';

describe('readFileBounded', () => {
  const dirs: string[] = [];
  after(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  it('reads a file of exactly the limit whole, and refuses one byte more, sync and async', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-bounded-'));
    dirs.push(dir);
    await writeFile(join(dir, 'at.txt'), 'a'.repeat(64));
    await writeFile(join(dir, 'past.txt'), 'a'.repeat(65));
    assert.equal((await readFileBounded(join(dir, 'at.txt'), 64)).toString(), 'a'.repeat(64));
    assert.equal(readFileBoundedSync(join(dir, 'at.txt'), 64).toString(), 'a'.repeat(64));
    await assert.rejects(readFileBounded(join(dir, 'past.txt'), 64), (err: unknown) => err instanceof FileTooLargeError && err.code === 'EFBIG' && err.limit === 64);
    assert.throws(() => readFileBoundedSync(join(dir, 'past.txt'), 64), FileTooLargeError);
  });

  it('stops one byte past the limit on a device whose size stat does not tell', async () => {
    await assert.rejects(readFileBounded('/dev/zero', 1024), FileTooLargeError);
    assert.throws(() => readFileBoundedSync('/dev/zero', 1024), FileTooLargeError);
  });

  it('passes other read errors on with their code', async () => {
    await assert.rejects(readFileBounded(join(tmpdir(), 'gatehouse-no-such-file'), 64), { code: 'ENOENT' });
    assert.throws(() => readFileBoundedSync(tmpdir(), 64), { code: 'EISDIR' });
  });
});
