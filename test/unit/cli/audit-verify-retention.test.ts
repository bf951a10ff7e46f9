// `gatehouse audit verify` after retention (audit.retainDays) removed the oldest records: the chain verifies
// from the anchor; a --head kept from before the removal cannot be found any more, and the refusal says that
// retention may be why instead of only accusing the log of having been rewritten.

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, it } from 'node:test';
import { auditCommand } from '../../../src/cli/audit.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';

let path: string;
const heads: string[] = [];
const T0 = Date.parse('2026-01-01T00:00:00Z');
const DAY = 86_400_000;

before(async () => {
  path = join(mkdtempSync(join(tmpdir(), 'gatehouse-audit-retention-')), 'audit.db');
  const store = new SqliteStore(path);
  for (let i = 0; i < 6; i++) {
    const anchor = await store.appendAudit({ time: new Date(T0 + i * DAY).toISOString(), callId: `c${i}`, runId: `r${i}`, subject: 'alice', toolRef: 'crm/search', tool: 'search', upstream: 'crm', method: 'tools/call', outcome: 'ok', latencyMs: 1 });
    heads.push(anchor.hash);
  }
  // Retention removes the first three days: records 1 to 3.
  assert.equal(await store.pruneAudit(T0 + 3 * DAY - 1), 3);
  await store.close();
});

async function verify(...flags: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await auditCommand(['verify', '--store', path, ...flags], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

it('the pruned chain verifies from its anchor, and a head still in it is found', async () => {
  const r = await verify('--head', heads[4]!);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /audit chain ok: 3 records \(from the anchor after record 3\)/);
});

it('a head whose record retention removed is not found, and the refusal names retention as a cause', async () => {
  const r = await verify('--head', heads[1]!);
  assert.equal(r.code, 1, r.out);
  assert.match(r.err, /does not hold the head/);
  assert.match(r.err, /retention/, r.err);
  assert.match(r.err, /records up to 3/, r.err);
});

it('a head written in upper-case hex (as some tools print SHA-256) is the same hash, not a usage error', async () => {
  const r = await verify('--head', heads[4]!.toUpperCase());
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /audit chain ok: 3 records/);
  // Still a hash: other text is refused as before.
  const bad = await verify('--head', `${heads[4]!.slice(0, 63)}G`);
  assert.equal(bad.code, 2, bad.out);
  assert.match(bad.err, /is not a SHA-256 hash/);
});
