// `gatehouse audit verify` on a store with no record yet prints the head of the empty chain, 64 zeros (the
// `prev` of the first record), and the operator keeps it as verify asks. A later `verify --head 000…` must
// find it: the chain starts from it. It said "audit chain does not hold the head 000…: 3 records link up, but
// records were rewritten or removed since that head was taken", exit 1, on an intact log: a false alarm of
// tampering, from the first head a new installation gives.

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { auditCommand } from '../../../src/cli/audit.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';

async function verify(path: string, ...flags: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await auditCommand(['verify', '--store', path, ...flags], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

it('the head an empty log printed is found once records follow it', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'gatehouse-audit-empty-head-')), 'audit.db');
  const store = new SqliteStore(path);
  await store.readAudit({});
  const empty = await verify(path);
  assert.equal(empty.code, 0, empty.err);
  const head = /head ([0-9a-f]{64})\n$/.exec(empty.out)?.[1];
  assert.equal(head, '0'.repeat(64));
  for (let i = 1; i <= 3; i++) await store.appendAudit({ time: new Date().toISOString(), callId: `c${i}`, runId: `r${i}`, subject: 'alice', method: 'tools/call', tool: 'search', outcome: 'ok', latencyMs: 1 });
  await store.close();
  const later = await verify(path, '--head', head!);
  assert.equal(later.err, '');
  assert.equal(later.code, 0);
  assert.match(later.out, /^audit chain ok: 3 records, last 3, head [0-9a-f]{64}\n$/);
});
