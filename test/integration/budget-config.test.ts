// A budget whose one call costs more than its limit can never admit a call: every call would be refused
// with budget_exhausted, by a window that never has room. The config checks refuse it, naming the budget,
// when the gateway starts and when a reload brings it (semantic-checks.ts; check-config runs the same).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateConfigObject } from '../../src/config/load.js';
import { startGateway } from '../helpers/gateway.js';

// Never called: the checks run before anything connects.
const UPSTREAMS = [{ name: 'up', url: 'http://127.0.0.1:9/mcp', era: 'modern' }];
const budget = (over: Record<string, unknown>) => ({ id: 'daily', per: 'subject', window: 'day', limit: 10, ...over });

/** The error starting a gateway with these budgets throws; one that starts is closed and fails the test. */
async function refusedAtStart(budgets: unknown[]): Promise<string> {
  let gw;
  try {
    gw = await startGateway({ upstreams: UPSTREAMS, policy: { budgets } });
  } catch (err) {
    return (err as Error).message;
  }
  await gw.close();
  assert.fail(`served: ${JSON.stringify(budgets)}`);
}

test('a budget whose cost (given, or the default 1) passes its limit is refused at start, naming it; cost equal to the limit is served', async () => {
  assert.match(await refusedAtStart([budget({ id: 'pricey', cost: 5, limit: 3 })]), /policy\.budgets\[0\] \("pricey"\): a call costs 5, more than the limit 3/);
  assert.match(await refusedAtStart([budget({}), budget({ id: 'fraction', limit: 0.5 })]), /policy\.budgets\[1\] \("fraction"\): a call costs 1, more than the limit 0\.5/);
  const gw = await startGateway({ upstreams: UPSTREAMS, policy: { budgets: [budget({ cost: 3, limit: 3 }), budget({ id: 'free', cost: 0, limit: 1 })] } });
  await gw.close();
});

test('a reload that brings such a budget is refused, naming it, and the running config stays', async () => {
  const gw = await startGateway({ upstreams: UPSTREAMS, policy: { budgets: [budget({})] } });
  try {
    const next = validateConfigObject({ upstreams: UPSTREAMS, auth: { anonymous: true }, listen: { host: '127.0.0.1', port: 0 }, idempotency: { requireKeys: false }, policy: { budgets: [budget({ cost: 11 })] } }, 'reload');
    const problems = await gw.gateway.reload(next);
    assert.equal(problems.length, 1, JSON.stringify(problems));
    assert.match(problems[0]!, /policy\.budgets\[0\] \("daily"\): a call costs 11, more than the limit 10/);
    assert.ok(gw.logs.some((l) => l.msg === 'config reload refused; the running config stays'));
  } finally {
    await gw.close();
  }
});
