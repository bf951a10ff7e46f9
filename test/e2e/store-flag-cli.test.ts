// `--store` names a SQLite file (DESIGN §CLI: the config finds the store). Given a Redis URL it was taken as a
// path: `audit verify --store redis://…` said "no store at redis://…" (echoing a password in the URL), and
// `serve --store redis://host:6379` created ./redis:/host:6379, a fresh SQLite file, and ran on it, unshared,
// while the operator believed it was on Redis. The flag now refuses a URL and says to use --config, without
// echoing the URL; and through --config a Redis store is read with only the store's secret present.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { auditCommand } from '../../src/cli/audit.js';
import { budgetsCommand } from '../../src/cli/budgets.js';
import type { CommandIO } from '../../src/cli/io.js';
import { openStore } from '../../src/store/open-store.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const PASSWORD = 'redis-pass-' + 'p'.repeat(20);
let redis: TestRedis;

function io(env: NodeJS.ProcessEnv = {}): CommandIO & { outText(): string; errText(): string } {
  const out: string[] = [];
  const err: string[] = [];
  return { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env, outText: () => out.join(''), errText: () => err.join('') };
}

before(async () => {
  redis = await startRedis({ password: PASSWORD });
});
after(async () => {
  await redis.stop();
});

const url = (): string => `redis://:${PASSWORD}@127.0.0.1:${redis.port}`;

describe('--store with a URL', () => {
  it('audit and budgets refuse it, name --config, and do not echo the URL', async () => {
    for (const run of [(x: CommandIO) => auditCommand(['verify', '--store', url()], x), (x: CommandIO) => budgetsCommand(['show', '--store', url()], x)]) {
      const x = io();
      // A flag's value the command cannot use is a usage error (exit 2), as in serve and every other command.
      assert.equal(await run(x), 2, x.outText());
      assert.match(x.errText(), /--store takes the path of a SQLite file, not a URL \(redis:\/\/…\); for a Redis store give --config FILE/);
      assert.doesNotMatch(x.errText(), new RegExp(PASSWORD));
    }
  });

  it('serve refuses it instead of creating a SQLite file named after the URL', async () => {
    const r = await runCli(['serve', '--upstream', 'http://127.0.0.1:9/mcp', '--port', '0', '--store', `redis://127.0.0.1:${redis.port}`], { timeoutMs: 8000 });
    // A flag's value serve cannot use is a usage error (exit 2), as its other flags' are.
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--store takes the path of a SQLite file, not a URL/);
    assert.equal(existsSync(join(ROOT, 'redis:')), false);
  });
});

describe('a Redis store through --config', () => {
  it('audit verify reads it with only the store\'s secret set', async () => {
    const store = openStore({ kind: 'redis', url: url(), keyPrefix: 'cli-test:', commandTimeoutMs: 2_000 });
    await store.appendAudit({ time: new Date().toISOString(), callId: 'c1', runId: 'r1', subject: 'alice', toolRef: 'crm/search', tool: 'search', upstream: 'crm', method: 'tools/call', outcome: 'ok', latencyMs: 1 });
    await store.close();
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-redis-'));
    const file = join(dir, 'gatehouse.yaml');
    writeFileSync(file, [
      'upstreams:',
      '  - { name: crm, url: "https://crm.example.com/mcp", headers: { Authorization: "Bearer ${env:CRM_TOKEN}" } }',
      'auth: { anonymous: true }',
      'store: { kind: redis, url: "${env:REDIS_URL}", keyPrefix: "cli-test:" }',
      '',
    ].join('\n'));
    const x = io({ REDIS_URL: url() });
    assert.equal(await auditCommand(['verify', '--config', file], x), 0, x.errText());
    assert.match(x.outText(), /audit chain ok: 1 records/);
  });
});
