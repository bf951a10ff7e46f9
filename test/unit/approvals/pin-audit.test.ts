// The audit records of reviewers' acts on pins (README "Tool pinning"; GATEWAY-REQUIREMENTS: every decision
// audited): an acceptance and a refused acceptance are one record shape, built in one place. The two were
// near-copies, and both took a ref's upstream as `ref.slice(0, ref.indexOf('/'))`: a refused path naming a
// ref with no `/` (any string reaches POST /pins/{ref}/accept, and a `*` entry of tools.pinningReviewers
// matches it) was recorded with its last character cut off as its upstream. Real SQLite store.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PinBook } from '../../../src/approvals/pins.js';
import { createLogger } from '../../../src/log/logger.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';
import { pinStoreOver, toolRoute } from '../../helpers/pin-store.js';

let dir: string;
let store: SqliteStore;
let book: PinBook;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-pin-audit-'));
  store = new SqliteStore(join(dir, 'gatehouse.db'));
  book = new PinBook(pinStoreOver(store), createLogger('error', () => {}));
});
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const routeOf = (description: string) => toolRoute('lookup', description);
const records = async () => (await store.readAudit({ limit: 100 })).filter((r) => r.method === 'pin');

test('an acceptance and a refused one are recorded alike: who, which tool, its upstream, the digests', async () => {
  assert.deepEqual(await book.check(routeOf('v1')), { ok: true });
  const changed = routeOf('v2');
  assert.equal((await book.check(changed)).ok, false);
  await book.refused('up/lookup', 'ann', changed.definitionSha256!);
  assert.equal((await book.accept('up/lookup', 'bob', changed.definitionSha256!)).ok, true);

  const [refused, accepted] = await records();
  const shape = (r: typeof refused) => ({ subject: r!.subject, reviewer: r!.reviewer, toolRef: r!.toolRef, upstream: r!.upstream, method: r!.method, outcome: r!.outcome, refusal: r!.refusal, latencyMs: r!.latencyMs });
  assert.deepEqual(shape(refused), { subject: 'ann', reviewer: 'ann', toolRef: 'up/lookup', upstream: 'up', method: 'pin', outcome: 'refused', refusal: 'forbidden', latencyMs: 0 });
  assert.deepEqual(shape(accepted), { subject: 'bob', reviewer: 'bob', toolRef: 'up/lookup', upstream: 'up', method: 'pin', outcome: 'accepted', refusal: undefined, latencyMs: 0 });
  assert.match(refused!.reason!, new RegExp(`acceptance of definition ${changed.definitionSha256} refused`));
  assert.equal(accepted!.reason, `definition ${routeOf('v1').definitionSha256} replaced by ${changed.definitionSha256}`);
  assert.notEqual(refused!.callId, accepted!.callId, 'each record is its own');
});

test('a refused ref with no "/" names no upstream, not the ref cut short', async () => {
  await book.refused('loose', 'ann', 'a'.repeat(64));
  const record = (await records()).find((r) => r.toolRef === 'loose');
  assert.ok(record, 'recorded');
  assert.equal(record.upstream, undefined, `upstream recorded as ${JSON.stringify(record.upstream)}`);
});
