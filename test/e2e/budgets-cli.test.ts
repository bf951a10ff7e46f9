// `gatehouse budgets show` (issue 13 item 4): the counters of the current windows, read from the store as an
// operator would, with each budget's limit and window when the config is given, filtered by subject.

import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Budget } from '../../src/config/schema.generated.js';
import { budgetKey, compileBudgets } from '../../src/policy/budget-stage.js';
import type { Principal } from '../../src/pipeline/principal.js';
import type { Route } from '../../src/pipeline/context.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-budgets-'));
const storePath = join(dir, 'state.db');
const configPath = join(dir, 'gatehouse.yaml');
const BUDGETS: Budget[] = [
  { id: 'daily', per: 'subject', window: 'day', limit: 100, cost: 1 },
  { id: 'search-cost', per: 'tenant', window: 'month', limit: 5000, tools: ['search/*'], cost: 5 },
];

before(async () => {
  writeFileSync(configPath, JSON.stringify({ upstreams: [{ name: 'search', url: 'http://127.0.0.1:9/mcp' }], auth: { anonymous: true }, store: { kind: 'sqlite', path: storePath }, policy: { budgets: BUDGETS } }));
  const [daily, cost] = compileBudgets(BUDGETS);
  const route: Route = { kind: 'tools', ref: 'search/query', publicName: 'query', original: 'query', upstream: 'search', listed: true, params: [] };
  const alice: Principal = { subject: 'alice@example.com', tenant: 'acme', scopes: [], groups: [], via: 'jwt' };
  const bot: Principal = { subject: 'key:ci-bot', tenant: 'acme', keyId: 'ci-bot', scopes: [], groups: [], via: 'api_key' };
  const store = new SqliteStore(storePath);
  for (let i = 0; i < 3; i++) await store.spendBudget(budgetKey(daily!, alice, route), 1, 100, 'day');
  await store.spendBudget(budgetKey(daily!, bot, route), 1, 100, 'day');
  await store.spendBudget(budgetKey(cost!, alice, route), 5, 5000, 'month');
  await store.close();
});

test('budgets show: a table of the current windows, with limits from the config', async () => {
  const out = await runCli(['budgets', 'show', '--config', configPath]);
  assert.equal(out.code, 0, out.stderr);
  const lines = out.stdout.trim().split('\n');
  assert.match(lines[0]!, /^BUDGET\s+PER\s+WHO\s+USED\s+LIMIT\s+WINDOW\s+RESETS AT$/);
  assert.match(out.stdout, /daily\s+subject\s+jwt:alice@example\.com\s+3\s+100\s+day\s+\d{4}-\d\d-\d\dT00:00:00\.000Z/);
  assert.match(out.stdout, /daily\s+subject\s+api_key:key:ci-bot\s+1\s+100\s+day/);
  assert.match(out.stdout, /search-cost\s+tenant\s+acme\s+5\s+5000\s+month\s+\d{4}-\d\d-01T00:00:00\.000Z/);
});

test('budgets show --subject, --json, and --store without a config', async () => {
  const mine = await runCli(['budgets', 'show', '--config', configPath, '--subject', 'alice@example.com', '--json']);
  assert.equal(mine.code, 0, mine.stderr);
  const rows = mine.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(
    rows.map((r) => [r.budget, r.who, r.used, r.limit]),
    [['daily', 'jwt:alice@example.com', 3, 100]],
  );
  const bare = await runCli(['budgets', 'show', '--store', storePath]);
  assert.equal(bare.code, 0);
  assert.match(bare.stdout, /daily\s+subject\s+jwt:alice@example\.com\s+3\s+-\s+-/);
});

test('bad input: no such store, no command, an unknown one', async () => {
  const missing = await runCli(['budgets', 'show', '--store', join(dir, 'nope.db')]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no store at/);
  assert.equal((await runCli(['budgets'])).code, 2);
  const unknown = await runCli(['budgets', 'reset']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown budgets command "reset"/);
  const help = await runCli(['budgets', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: gatehouse budgets show/);
});
