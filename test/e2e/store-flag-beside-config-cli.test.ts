// `--store FILE` beside `--config FILE` in `audit` and `budgets`. Before, the config was not even read: with a
// config whose store is Redis (store.tls and all), `audit verify --config redis.yaml --store old.db` verified
// an old SQLite file and said "audit chain ok" as if it were the deployment's log, and `budgets show`
// dropped the config's limits its help says --config gives. Now: beside a config whose store is Redis,
// --store is a usage error (exit 2) naming both and what to give instead; beside a config whose store is
// SQLite, the file is read (a copy or backup) and the config gives the rest (budgets' limits). --store alone
// still reads the file without any config, $GATEHOUSE_CONFIG's included.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Budget } from '../../src/config/schema.generated.js';
import type { Route } from '../../src/pipeline/context.js';
import type { Principal } from '../../src/pipeline/principal.js';
import { budgetKey, compileBudgets } from '../../src/policy/budget-stage.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { runCli, serveCli } from '../helpers/cli.js';
import { mtlsCertificates } from '../helpers/redis.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-store-beside-config-'));
const copy = join(dir, 'copy.db');
const redisConfig = join(dir, 'redis.yaml');
const sqliteConfig = join(dir, 'sqlite.yaml');
const BUDGETS: Budget[] = [{ id: 'daily', per: 'subject', window: 'day', limit: 100, cost: 1 }];

before(async () => {
  const pems = mtlsCertificates();
  for (const [name, pem] of [['ca.crt', pems.ca], ['tls.crt', pems.client.cert], ['tls.key', pems.client.key]] as const) writeFileSync(join(dir, name), pem);
  // Nothing listens there: the store must not be connected to, only named.
  writeFileSync(redisConfig, [
    'upstreams: [{ name: search, url: "http://127.0.0.1:9/mcp" }]',
    'auth: { anonymous: true }',
    `store: { kind: redis, url: "rediss://127.0.0.1:9", keyPrefix: "prod:", tls: { ca: "\${file:ca.crt}", cert: "\${file:tls.crt}", key: "\${file:tls.key}" } }`,
    `policy: { budgets: ${JSON.stringify(BUDGETS)} }`,
    '',
  ].join('\n'));
  writeFileSync(sqliteConfig, JSON.stringify({ upstreams: [{ name: 'search', url: 'http://127.0.0.1:9/mcp' }], auth: { anonymous: true }, store: { kind: 'sqlite', path: join(dir, 'live.db') }, policy: { budgets: BUDGETS } }));
  const store = new SqliteStore(copy);
  await store.appendAudit({ time: new Date().toISOString(), callId: 'c1', runId: 'r1', subject: 'alice', toolRef: 'search/query', tool: 'query', upstream: 'search', method: 'tools/call', outcome: 'ok', latencyMs: 1 });
  const route: Route = { kind: 'tools', ref: 'search/query', publicName: 'query', original: 'query', upstream: 'search', listed: true, params: [] };
  const alice: Principal = { subject: 'alice@example.com', scopes: [], groups: [], via: 'jwt' };
  await store.spendBudget(budgetKey(compileBudgets(BUDGETS)[0]!, alice, route), 3, 100, 'day');
  await store.close();
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('beside a config whose store is Redis with store.tls', () => {
  for (const args of [['audit', 'verify'], ['budgets', 'show']]) {
    test(`${args.join(' ')} --config --store: a usage error naming both, not the file read as the deployment's`, async () => {
      const r = await runCli([...args, '--config', redisConfig, '--store', copy]);
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, new RegExp(`^--store ${copy.replace(/\./g, '\\.')} and --config ${redisConfig.replace(/\./g, '\\.')} name two stores: the config's is Redis \\(store\\.kind: redis, with store\\.tls\\)`));
      assert.match(r.stderr, /give --config alone to read the Redis store, or --store alone to read the file/);
      assert.match(r.stderr, new RegExp(`Usage: gatehouse ${args[0]}`));
    });
  }

  test('--store alone reads the file, the config in $GATEHOUSE_CONFIG unread', async () => {
    const r = await runCli(['audit', 'verify', '--store', copy], { env: { ...process.env, GATEHOUSE_CONFIG: redisConfig } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^audit chain ok: 1 records/);
    assert.equal(existsSync(join(dir, 'live.db')), false);
  });
});

describe('beside a config whose store is SQLite', () => {
  test('budgets show: the counters of the file, the limits of the config', async () => {
    const r = await runCli(['budgets', 'show', '--config', sqliteConfig, '--store', copy]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /daily\s+subject\s+jwt:alice@example\.com\s+3\s+100\s+day\s/);
  });

  test('audit verify reads the file (the config\'s own store is not there, and not created)', async () => {
    const r = await runCli(['audit', 'verify', '--config', sqliteConfig, '--store', copy]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^audit chain ok: 1 records/);
    assert.equal(existsSync(join(dir, 'live.db')), false);
  });
});

// serve keeps its rule, flags over the file (DESIGN §CLI), but says what the flag replaced: a replica meant
// to share the config's Redis would otherwise count, limit and audit alone without a word.
test('serve --config with a Redis store and --store: runs on the file, and warns that it shares state with no replica', async () => {
  const gw = await serveCli(['--config', redisConfig, '--port', '0', '--store', join(dir, 'serve.db')]);
  try {
    const warned = gw.stderr().split('\n').filter((l) => l.includes("--store replaces the config file's Redis store"));
    assert.equal(warned.length, 1, gw.stderr());
    assert.match(warned[0]!, /"level":"warn"/);
    assert.ok(existsSync(join(dir, 'serve.db')), 'the state is in the file');
  } finally {
    assert.equal(await gw.stop(), 0);
  }
});
