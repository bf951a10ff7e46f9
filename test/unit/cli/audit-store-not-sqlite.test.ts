// `gatehouse audit` (and `serve`, `budgets`) on a path that is there but is no SQLite database: a text file,
// a directory. The SQLite writer thread failed to open it and the error crossed the thread without its
// message (better-sqlite3's SqliteError is not a built-in error, so only its `code` was cloned), and the
// operator read `error: SQLite store: the writer stopped (undefined)`. Now the cause is named.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { auditCommand } from '../../../src/cli/audit.js';

async function audit(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await auditCommand(args, { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

describe('audit on a path that is no SQLite database', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-not-sqlite-'));

  it('a text file: exit 1, and the error says it is not a database', async () => {
    const path = join(dir, 'notes.txt');
    writeFileSync(path, 'these are not the records you are looking for\n'.repeat(100));
    const r = await audit('verify', '--store', path);
    assert.equal(r.code, 1);
    assert.equal(r.out, '');
    assert.doesNotMatch(r.err, /undefined/);
    assert.match(r.err, /not a database/);
  });

  it('a directory: exit 1, and the error says it cannot be opened', async () => {
    const path = join(dir, 'a-directory.db');
    mkdirSync(path);
    const r = await audit('export', '--store', path);
    assert.equal(r.code, 1);
    assert.equal(r.out, '');
    assert.doesNotMatch(r.err, /undefined/);
    assert.match(r.err, /unable to open database file/);
  });
});
