// The audit anchor (where the chain starts again after retention: the seq and hash of the last record
// removed) is stored text too, and whoever can write the store can overwrite it. `gatehouse audit verify`
// then printed JSON.parse's error with the stored text quoted, escape sequences and all ("Unexpected token
// 'g', "garbage^[[2J" is not valid JSON"), or judged the chain from an anchor "after record x". The anchor
// is now read as the records are: one that is not JSON with an integer seq and a SHA-256 hash fails the
// read, named, its text not quoted; exit 1. Both stores.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { auditCommand, verifyAudit } from '../../src/cli/audit.js';
import { openStore } from '../../src/store/open-store.js';
import { captured, fillAudit } from '../helpers/audit-cli.js';
import { redisForSuite } from '../helpers/redis.js';

const DAMAGE = [
  { name: 'text that is not JSON', text: 'garbage\u001b[2J' },
  { name: 'null', text: 'null' },
  { name: 'a seq that is no number', text: '{"seq":"x","hash":"' + 'a'.repeat(64) + '"}' },
  { name: 'no hash', text: '{"seq":2}' },
];

function assertNamed(text: string): void {
  assert.match(text, /the audit anchor cannot be read: it is not an anchor/);
  assert.doesNotMatch(text, /garbage|\u001b|after record x|Cannot read properties/);
}

describe('SQLite', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-unreadable-anchor-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [i, d] of DAMAGE.entries()) {
    test(`an anchor overwritten with ${d.name}: verify names it and exits 1`, async () => {
      const path = join(dir, `state-${i}.db`);
      const store = openStore({ kind: 'sqlite', path });
      await fillAudit(store);
      await store.close();
      const db = new Database(path);
      db.prepare("INSERT OR REPLACE INTO meta (k, v) VALUES ('audit_anchor', ?)").run(d.text);
      db.close();
      const io = captured();
      const code = await auditCommand(['verify', '--store', path], io);
      assert.equal(code, 1, io.errText);
      assert.equal(io.outText, '');
      assertNamed(io.errText);
    });
  }
});

describe('Redis', () => {
  const r = redisForSuite();

  for (const d of DAMAGE) {
    test(`an anchor overwritten with ${d.name}: verify's read of it fails, naming it`, async () => {
      await r.raw.flushall();
      const store = openStore({ kind: 'redis', url: r.redis.url, keyPrefix: 'anchor:', commandTimeoutMs: 5_000 });
      try {
        await fillAudit(store);
        await r.raw.set('anchor:{audit}:anchor', d.text);
        const io = captured();
        // The command prints the error verify ends with (`error: …`, exit 1), as for SQLite above.
        await assert.rejects(verifyAudit(store, io, undefined), (err: Error) => {
          assertNamed(err.message);
          return true;
        });
        assert.equal(io.outText, '');
      } finally {
        await store.close();
      }
    });
  }
});
