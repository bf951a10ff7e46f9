// `gatehouse audit` and `gatehouse budgets` read a SQLite file; reading must not make one. A path that does
// not exist was already refused ("no store at …"), but a file that exists and holds no Gatehouse store (an
// empty file, another program's database) was opened as the gateway opens its store: the writer made it one
// (WAL, every table), and `audit verify` answered "audit chain ok: 0 records … head 000…", exit 0, for a
// file that never held an audit log (an empty file left by a failed copy, the wrong path in a script).
// Now such a file is refused, exit 1, and left as it was.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { auditCommand } from '../../../src/cli/audit.js';
import { budgetsCommand } from '../../../src/cli/budgets.js';
import type { CommandIO } from '../../../src/cli/io.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';

async function run(command: (args: string[], io: CommandIO) => Promise<number>, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await command(args, { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

function tables(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>).map((t) => t.name);
  } finally {
    db.close();
  }
}

describe('audit and budgets on a file that holds no Gatehouse store', () => {
  it('an empty file: verify, export and budgets show refuse it (exit 1) and leave it empty', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-empty-store-'));
    const path = join(dir, 'state.db');
    writeFileSync(path, '');
    for (const [command, args] of [[auditCommand, ['verify']], [auditCommand, ['export']], [budgetsCommand, ['show']]] as const) {
      const r = await run(command, ...args, '--store', path);
      assert.equal(r.code, 1, `${args[0]}: ${r.out}${r.err}`);
      assert.equal(r.out, '', `${args[0]} printed nothing`);
      assert.match(r.err, /is not a Gatehouse store \(it has no audit table\)/);
    }
    assert.equal(statSync(path).size, 0, 'the file is still empty');
    assert.deepEqual(readdirSync(dir), ['state.db'], 'no WAL or journal was made beside it');
  });

  it("another program's database: refused (exit 1), and no table is added to it", { timeout: 30_000 }, async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'gatehouse-foreign-store-')), 'notes.sqlite');
    const db = new Database(path);
    db.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me')");
    db.close();
    for (const [command, args] of [[auditCommand, ['verify']], [auditCommand, ['tail']], [budgetsCommand, ['show']]] as const) {
      const r = await run(command, ...args, '--store', path);
      assert.equal(r.code, 1, `${args[0]}: ${r.out}${r.err}`);
      assert.match(r.err, /is not a Gatehouse store \(it has no audit table\)/);
    }
    assert.deepEqual(tables(path), ['notes']);
    assert.equal(existsSync(`${path}-wal`), false, 'not switched to WAL');
  });

  it('a Gatehouse store with no record yet is still read: verify ok with 0 records', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'gatehouse-new-store-')), 'state.db');
    const store = new SqliteStore(path);
    await store.ping();
    await store.readAudit({});
    await store.close();
    const r = await run(auditCommand, 'verify', '--store', path);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^audit chain ok: 0 records/);
  });
});
