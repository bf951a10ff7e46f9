// The SQLite store's format version (PRAGMA user_version, sqlite.org/pragma.html#pragma_user_version). The
// schema carried none: a store written by a newer Gatehouse, whose tables or records may mean something
// else, was opened as one of this version's (the schema's CREATE IF NOT EXISTS passes over tables that are
// there) and used, or read by `audit verify` as if its format were known. Now a store is stamped with its
// format when it is made (or first opened by this version: a store from before the stamp is this format),
// and one stamped newer is refused, with the versions named, by the gateway's store, its readiness ping
// (so `gatehouse doctor` and /readyz say so before any call), and the CLI's readers, and left unchanged.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { auditCommand } from '../../src/cli/audit.js';
import { checkStore } from '../../src/doctor/store-checks.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { STORE_VERSION } from '../../src/store/sqlite-version.js';
import { captured, fillAudit } from '../helpers/audit-cli.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-store-version-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function userVersion(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return db.pragma('user_version', { simple: true }) as number;
  } finally {
    db.close();
  }
}

/** A store with five records, closed. */
async function filledStore(name: string): Promise<string> {
  const path = join(dir, name);
  const store = new SqliteStore(path);
  await fillAudit(store);
  await store.close();
  return path;
}

test('a new store is stamped with the format this Gatehouse writes', async () => {
  assert.equal(STORE_VERSION, 1);
  assert.equal(userVersion(await filledStore('new.db')), STORE_VERSION);
});

test('a store from before the stamp (user_version 0) is taken as this format, stamped, and its records kept', async () => {
  const path = await filledStore('unstamped.db');
  const db = new Database(path);
  db.pragma('user_version = 0');
  db.close();
  const store = new SqliteStore(path);
  try {
    await store.ping();
    assert.equal((await store.readAudit({})).length, 5);
  } finally {
    await store.close();
  }
  assert.equal(userVersion(path), STORE_VERSION);
});

describe('a store stamped by a newer Gatehouse', () => {
  let path: string;
  let bytes: Buffer;
  const newer = STORE_VERSION + 1;
  before(async () => {
    path = await filledStore('newer.db');
    const db = new Database(path);
    db.pragma(`user_version = ${newer}`);
    db.close();
    bytes = readFileSync(path);
  });

  const says = new RegExp(`written by a newer Gatehouse \\(store format ${newer}; this one reads up to ${STORE_VERSION}\\)`);

  test("the gateway's store refuses it: operations fail, naming both formats", async () => {
    const store = new SqliteStore(path);
    try {
      await assert.rejects(store.appendAudit({ time: new Date().toISOString(), callId: 'x', runId: 'x', subject: 'alice', method: 'tools/call', outcome: 'ok', latencyMs: 1 }), (err: Error) => err.name === 'StoreUnavailableError' && says.test(err.message));
    } finally {
      await store.close();
    }
    assert.deepEqual(readFileSync(path), bytes, 'the file is left as it was');
  });

  test('its readiness ping fails before the store is used, so doctor fails it', async () => {
    const store = new SqliteStore(path);
    try {
      await assert.rejects(store.ping(), (err: Error) => err.name === 'StoreUnavailableError' && says.test(err.message));
    } finally {
      await store.close();
    }
    const found = await checkStore({ kind: 'sqlite', path }, { timeoutMs: 8_000, waitMs: 0 });
    assert.equal(found.verdict, 'fail', JSON.stringify(found));
    assert.match(found.detail, says, JSON.stringify(found));
  });

  test('audit verify refuses it (exit 1) instead of judging a format it does not know', async () => {
    const io = captured();
    assert.equal(await auditCommand(['verify', '--store', path], io), 1);
    assert.match(io.errText, says);
    assert.equal(io.outText, '');
    assert.deepEqual(readFileSync(path), bytes, 'the file is left as it was');
  });
});
