// `gatehouse audit export --since/--until` read dates as the config reads API key expiry (src/config/
// expiry.ts): a day that does not exist is refused, not rolled over (Date.parse reads 2026-02-30 as 2 March),
// a time without an offset is UTC whatever the machine's zone, and --until with a date alone takes in that
// whole day ("records at or before 2026-03-01" includes those of 1 March).

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { auditCommand } from '../../../src/cli/audit.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';

// A zone other than UTC, so a time read as local time shows.
process.env.TZ = 'America/New_York';

let path: string;
const TIMES = ['2026-02-28T12:00:00.000Z', '2026-03-01T12:00:00.000Z', '2026-03-02T12:00:00.000Z', '2026-03-03T12:00:00.000Z'];

before(async () => {
  path = join(mkdtempSync(join(tmpdir(), 'gatehouse-audit-flags-')), 'audit.db');
  const store = new SqliteStore(path);
  for (const [i, time] of TIMES.entries()) {
    await store.appendAudit({ time, callId: `c${i}`, runId: `r${i}`, subject: 'alice', toolRef: 'crm/search', tool: 'search', upstream: 'crm', method: 'tools/call', outcome: 'ok', latencyMs: 1 });
  }
  await store.close();
});

async function exported(...flags: string[]): Promise<{ code: number; times: string[]; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await auditCommand(['export', '--store', path, ...flags], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
  const times = out.join('').split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { time: string }).time);
  return { code, times, err: err.join('') };
}

describe('audit export --since/--until', () => {
  it('refuses a day that does not exist instead of reading it as one in the next month', async () => {
    for (const flag of ['--since', '--until']) {
      const r = await exported(flag, '2026-02-30');
      // Usage (exit 2), as a bad --head is: the value cannot be used, whatever the store holds.
      assert.equal(r.code, 2, `${flag}: ${JSON.stringify(r.times)}`);
      assert.match(r.err, new RegExp(`${flag} "2026-02-30" is not a date or time`));
      assert.deepEqual(r.times, []);
    }
    const hour = await exported('--since', '2026-03-01T24:00');
    assert.equal(hour.code, 2, JSON.stringify(hour.times));
  });

  it('--until with a date alone takes in that whole day', async () => {
    const r = await exported('--since', '2026-03-01', '--until', '2026-03-02');
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(r.times, [TIMES[1], TIMES[2]]);
  });

  it('a time without an offset is UTC', async () => {
    const r = await exported('--since', '2026-03-01T12:00', '--until', '2026-03-01T12:00:00');
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(r.times, [TIMES[1]]);
  });
});

describe('audit tail --since/--until', () => {
  it('prints only the new records inside the window', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const stop = new AbortController();
    // The window ended before the tail began: nothing written from now on is in it.
    const running = auditCommand(['tail', '--store', path, '--interval-ms', '50', '--until', '2026-03-03'], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} }, stop.signal);
    await sleep(200);
    const store = new SqliteStore(path);
    await store.appendAudit({ time: new Date().toISOString(), callId: 'late', runId: 'late', subject: 'alice', toolRef: 'crm/search', tool: 'search', upstream: 'crm', method: 'tools/call', outcome: 'ok', latencyMs: 1 });
    await store.close();
    await sleep(300);
    stop.abort();
    assert.equal(await running, 0, err.join(''));
    assert.match(err.join(''), /following the audit log/);
    assert.deepEqual(out, [], 'a record after --until is not printed');
  });
});
