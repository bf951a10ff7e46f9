// Whose counter a budget or rate limit `per: tenant` (or a budget `per: key`) spends from: the tenant (the
// key's id), or, for a caller without one, a fallback `-<via>:<subject>` of its own. A tenant comes from a
// token's claim (auth.jwt.tenantClaim) or an API key's config, and a key's id may start with "-" too
// (`^[A-Za-z0-9_.:-]{1,64}$`), so the two kinds of names must never meet: a caller whose token says
// tenant "-jwt:alice" must not spend alice's budget (GATEWAY-REQUIREMENTS.md, budgets per caller).
// Spent on a real SQLite store.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Route } from '../../../src/pipeline/context.js';
import type { Principal } from '../../../src/pipeline/principal.js';
import { budgetKey, compileBudgets } from '../../../src/policy/budget-stage.js';
import { bucketKey, compileLimits } from '../../../src/policy/rate-limits.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-caller-keys-'));
const store = new SqliteStore(join(dir, 'state.db'));
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const route: Route = { kind: 'tools', ref: 'crm/search', publicName: 'search', original: 'search', upstream: 'crm', listed: true, params: [] };
const caller = (p: Partial<Principal>): Principal => ({ subject: 'alice', scopes: [], groups: [], via: 'jwt', ...p });

/** A caller without a tenant, and one whose token's tenant claim is written as the first one's fallback. */
const alice = caller({});
const forger = caller({ subject: 'mallory', tenant: '-jwt:alice' });

test('a tenant written as a tenantless caller\'s fallback does not spend that caller\'s budget', async () => {
  const [perTenant] = compileBudgets([{ id: 'monthly', per: 'tenant', window: 'month', limit: 2, cost: 1 }]);
  for (let i = 0; i < 2; i++) assert.equal((await store.spendBudget(budgetKey(perTenant!, forger, route), 1, 2, 'month')).allowed, true);
  assert.equal((await store.spendBudget(budgetKey(perTenant!, alice, route), 1, 2, 'month')).allowed, true, 'alice\'s own budget is untouched');
});

test('a key id written as a keyless caller\'s fallback does not share its budget', () => {
  const [perKey] = compileBudgets([{ id: 'daily', per: 'key', window: 'day', limit: 5, cost: 1 }]);
  const key = caller({ via: 'api_key', subject: 'key:-jwt:alice', keyId: '-jwt:alice' });
  assert.notEqual(budgetKey(perKey!, key, route), budgetKey(perKey!, alice, route));
});

test('a rate limit per tenant keeps the same two apart', () => {
  const { call } = compileLimits([{ id: 'tenants', per: 'tenant', rate: 1, perSeconds: 1 }]);
  assert.notEqual(bucketKey(call[0]!, forger, route, '127.0.0.1'), bucketKey(call[0]!, alice, route, '127.0.0.1'));
});

test('the keys of tenants and key ids that do not start with "-" are the ones they always were', () => {
  const [perTenant, perKey] = compileBudgets([
    { id: 'monthly', per: 'tenant', window: 'month', limit: 2, cost: 1 },
    { id: 'daily', per: 'key', window: 'day', limit: 5, cost: 1 },
  ]);
  const { call } = compileLimits([{ id: 'tenants', per: 'tenant', rate: 1, perSeconds: 1 }]);
  assert.equal(budgetKey(perTenant!, caller({ tenant: 'acme' }), route), 'budget:monthly:tenant:acme');
  assert.equal(budgetKey(perTenant!, alice, route), 'budget:monthly:tenant:-jwt:alice');
  assert.equal(budgetKey(perKey!, caller({ via: 'api_key', keyId: 'ci-bot' }), route), 'budget:daily:key:ci-bot');
  assert.equal(bucketKey(call[0]!, caller({ tenant: 'acme' }), route, '127.0.0.1'), 'rl:tenants:acme');
  assert.equal(bucketKey(call[0]!, alice, route, '127.0.0.1'), 'rl:tenants:-jwt:alice');
});

test('tenants that start with "-" stay apart from each other', () => {
  const [perTenant] = compileBudgets([{ id: 'monthly', per: 'tenant', window: 'month', limit: 2, cost: 1 }]);
  const keys = ['-a', '--a', 'a', '-jwt:a'].map((tenant) => budgetKey(perTenant!, caller({ tenant }), route));
  assert.equal(new Set(keys).size, keys.length);
});
