// A store file that is no SQLite database (a wrong --store path, a file overwritten) or a path that is a
// directory. The SQLite writer thread fails to open it, and the error crosses the thread as `{ code }` alone,
// without a message: `gatehouse audit verify --store notes.txt` said "SQLite store: the writer stopped
// (undefined)", and so did every call's log line in serve. The reason is now said in words, with its code.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-broken-store-'));
const notDb = join(dir, 'notes.db');
writeFileSync(notDb, 'these are notes, not a database\n'.repeat(200));

describe('a store path that is not a SQLite database', () => {
  for (const args of [['audit', 'verify'], ['audit', 'export'], ['budgets', 'show']]) {
    it(`${args.join(' ')} says the file is not a SQLite database`, async () => {
      const r = await runCli([...args, '--store', notDb]);
      assert.equal(r.code, 1);
      assert.equal(r.stderr, 'error: SQLite store: the writer stopped (the file is not a SQLite database: file is not a database (SQLITE_NOTADB))\n');
    });
  }

  it('a directory says it cannot be opened', async () => {
    const r = await runCli(['audit', 'verify', '--store', dir]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: SQLite store: the writer stopped \(the file cannot be opened: a directory, or a path this user may not use: unable to open database file \(SQLITE_CANTOPEN\)\)\n$/);
    assert.doesNotMatch(r.stderr, /undefined/);
  });
});
