// `gatehouse audit export --since/--until` pages through the store with readAudit({ afterSeq, limit,
// since, until }) and stops at the first page shorter than its limit (cli/audit.ts allRecords). So the
// limit must count the records that match the time filter, as the SQLite store's query does (WHERE seq > ?
// AND time_ms BETWEEN ? AND ? LIMIT ?); the Redis store once took `limit` records by seq and filtered
// those, so a window that starts after the first page's records read as empty and the export printed nothing.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/store/open-store.js';
import type { AuditEntry, Store } from '../../src/store/store.js';
import { auditCommand } from '../../src/cli/audit.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

const t0 = Date.parse('2026-01-01T00:00:00Z');
function entry(n: number, minute: number): AuditEntry {
  return { time: new Date(t0 + minute * 60_000).toISOString(), callId: `call-${n}`, runId: `run-${n}`, subject: 'key:ci', method: 'tools/call', tool: 'echo', toolRef: 'up/echo', outcome: 'ok', latencyMs: 1 };
}

let prefixes = 0;
const kinds = [
  { kind: 'sqlite', config: () => ({ kind: 'sqlite' as const, path: join(mkdtempSync(join(tmpdir(), 'gatehouse-audit-pages-')), 'state.db') }) },
  { kind: 'redis', config: () => ({ kind: 'redis' as const, url: redis.url, keyPrefix: `audit-pages${++prefixes}:`, commandTimeoutMs: 2_000 }) },
];

for (const { kind, config } of kinds) {
  describe(`audit reads filtered by time: ${kind}`, () => {
    test('the limit counts records in the time window: old records before it do not hide the window', async () => {
      const s: Store = openStore(config());
      try {
        // Six records on day one, then four an hour later.
        for (let i = 0; i < 6; i++) await s.appendAudit(entry(i, i));
        for (let i = 6; i < 10; i++) await s.appendAudit(entry(i, 60 + i));
        const since = t0 + 60 * 60_000;
        assert.deepEqual((await s.readAudit({ since, limit: 3 })).map((r) => r.seq), [7, 8, 9], 'the first three records at or after since');
        assert.deepEqual((await s.readAudit({ afterSeq: 9, since, limit: 3 })).map((r) => r.seq), [10]);
        assert.deepEqual((await s.readAudit({ until: t0 + 2 * 60_000, limit: 2 })).map((r) => r.seq), [1, 2]);
        assert.deepEqual((await s.readAudit({ afterSeq: 2, until: t0 + 2 * 60_000, limit: 2 })).map((r) => r.seq), [3], 'past the window: only what matches, the rest of the log read through');
      } finally {
        await s.close();
      }
    });

    test('gatehouse audit export --since prints the records of the window when more than a page of older ones come first', async () => {
      const cfg = config();
      const s: Store = openStore(cfg);
      // 1,000 is the export's page (cli/audit.ts PAGE): 1,001 old records fill the first page and more.
      try {
        await Promise.all(Array.from({ length: 1_001 }, (_, i) => s.appendAudit(entry(i, 0))));
        for (let i = 0; i < 3; i++) await s.appendAudit(entry(2_000 + i, 120));
      } finally {
        await s.close();
      }
      let out = '';
      let err = '';
      const io = { out: (t: string) => void (out += t), err: (t: string) => void (err += t), env: {} };
      const storeArgs = cfg.kind === 'sqlite' ? ['--store', cfg.path] : ['--store', cfg.url];
      if (cfg.kind === 'redis') {
        // No --store form for a prefix: a config file names it.
        const dir = mkdtempSync(join(tmpdir(), 'gatehouse-audit-pages-cfg-'));
        writeFileSync(join(dir, 'gatehouse.yaml'), `upstreams:\n  - name: crm\n    url: http://127.0.0.1:3001/mcp\nstore:\n  kind: redis\n  url: ${cfg.url}\n  keyPrefix: "${cfg.keyPrefix}"\n`);
        storeArgs.splice(0, 2, '--config', join(dir, 'gatehouse.yaml'));
      }
      const code = await auditCommand(['export', ...storeArgs, '--since', new Date(t0 + 60 * 60_000).toISOString()], io as never);
      assert.equal(code, 0, err);
      const calls = out.trim().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { callId: string }).callId);
      assert.deepEqual(calls, ['call-2000', 'call-2001', 'call-2002']);
    });
  });
}
