// `gatehouse audit tail` prints the records written after it started. To find where the log ended it read
// every record there was, page by page (minutes on a log of millions), and a record appended meanwhile was
// taken for one of the old ones: read, and never printed. It now asks the store where the log ends (one
// read) and follows from there, so a record written while it starts is printed.

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { tailAudit } from '../../../src/cli/audit.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';
import type { AuditEntry, Store } from '../../../src/store/store.js';

function entry(i: number): AuditEntry {
  return { time: new Date().toISOString(), callId: `c${i}`, runId: `r${i}`, subject: 'alice', method: 'tools/call', tool: 'lookup', outcome: 'ok', latencyMs: 1 };
}

it('a record appended while tail starts is printed', { timeout: 30_000 }, async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'gatehouse-tail-start-')), 'audit.db');
  const gateway: Store = new SqliteStore(path);
  for (let i = 1; i <= 2_500; i += 500) await Promise.all(Array.from({ length: 500 }, (_, k) => gateway.appendAudit(entry(i + k), 500)));
  // The gateway appends record 2,501 as tail's first read of the store is answered.
  let appended = false;
  const hooked = (store: Store): Store =>
    new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          const answer = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          if (!appended && (name === 'readAudit' || name === 'auditLastSeq')) {
            appended = true;
            await gateway.appendAudit(entry(2_501));
          }
          return answer;
        };
      },
    });
  const out: string[] = [];
  const err: string[] = [];
  const stop = new AbortController();
  const reader = hooked(new SqliteStore(path, { existing: true }));
  const running = tailAudit(reader, { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} }, {}, 50, stop.signal);
  for (let i = 0; i < 100 && out.length === 0; i++) await sleep(50);
  stop.abort();
  assert.equal(await running, 0, err.join(''));
  await reader.close();
  await gateway.close();
  assert.ok(appended);
  assert.match(err.join(''), /following the audit log after record 2500;/);
  assert.deepEqual(out.map((l) => (JSON.parse(l) as { seq: number }).seq), [2501]);
});
