// `gatehouse audit verify` and `export` on a log where one record's stored text was overwritten with what
// is no audit record: text that is not JSON, `null`, an object without `seq`, `prev` and `hash`. The store
// handed JSON.parse's error up unlabelled, so verify printed `error: SQLite store: Unexpected token 'g',
// "garbage" is not valid JSON` (the stored text quoted, and no word of which record), and `null` ended in
// `error: Cannot read properties of null (reading 'seq')`; an object without `seq` was reported as broken
// at "record undefined". Now the store names the record it cannot read, and quotes none of its text: exit 1
// (the status of a broken chain or an unreadable store, `gatehouse audit --help`). Both stores.

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

/** What record 3 is overwritten with, and a word of it that must not be echoed. */
const DAMAGE = [
  { name: 'text that is not JSON', text: 'garbage\u001b[2J', echo: /garbage/ },
  { name: 'null', text: 'null', echo: /Cannot read properties/ },
  { name: 'an object without seq, prev and hash', text: '{"note":"edited by hand"}', echo: /edited by hand|record undefined/ },
];

function assertNamed(io: { outText: string; errText: string }, code: number, echo: RegExp): void {
  assert.equal(code, 1, io.errText);
  assert.equal(io.outText.includes('audit chain ok'), false);
  assert.match(io.errText, /audit record 3 cannot be read: it is not an audit record/);
  assert.doesNotMatch(io.errText, echo);
  assert.doesNotMatch(io.errText, /\u001b/);
}

describe('SQLite', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-unreadable-record-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [i, d] of DAMAGE.entries()) {
    test(`a record overwritten with ${d.name}: verify and export name it and exit 1`, async () => {
      const path = join(dir, `state-${i}.db`);
      const store = openStore({ kind: 'sqlite', path });
      await fillAudit(store);
      await store.close();
      const db = new Database(path);
      db.prepare('UPDATE audit SET record = ? WHERE seq = 3').run(d.text);
      db.close();
      for (const action of ['verify', 'export']) {
        const io = captured();
        const code = await auditCommand([action, '--store', path], io);
        assertNamed(io, code, d.echo);
        if (action === 'export') assert.equal(io.outText.split('\n').filter(Boolean).length, 0, 'the page holding it is not half printed');
      }
    });
  }
});

describe('Redis', () => {
  const r = redisForSuite();

  for (const d of DAMAGE) {
    test(`a record overwritten with ${d.name}: verify's walk ends naming it`, async () => {
      await r.raw.flushall();
      const store = openStore({ kind: 'redis', url: r.redis.url, keyPrefix: 'damage:', commandTimeoutMs: 5_000 });
      try {
        await fillAudit(store);
        await r.raw.zremrangebyscore('damage:{audit}:log', 3, 3);
        await r.raw.zadd('damage:{audit}:log', 3, d.text);
        // The command prints the error the walk ends with (`error: …`, exit 1), as for SQLite above.
        const io = captured();
        await assert.rejects(verifyAudit(store, io, undefined), (err: Error) => {
          assertNamed({ outText: io.outText, errText: err.message }, 1, d.echo);
          return true;
        });
      } finally {
        await store.close();
      }
    });
  }
});
