// policy.rules' ids are optional, but a rule that has one is named by it in refusals (`rule`), logs and
// audit records, as the other policy lists' entries are; those lists refused an id used twice, the rules did
// not, so two rules of one id gave records that could not tell which rule refused.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateConfigObject } from '../../../src/config/load.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';

const config = (rules: unknown[]) => validateConfigObject({ upstreams: [{ name: 'up', url: 'http://127.0.0.1:3001/mcp' }], auth: { anonymous: true }, listen: { host: '127.0.0.1' }, policy: { rules } });

test('two policy rules with one id are a problem naming the id', () => {
  const problems = unsupportedFeatures(config([
    { id: 'no-admin', access: 'deny', tools: ['up/admin_*'] },
    { id: 'no-admin', access: 'deny', tools: ['up/root_*'] },
    { access: 'allow', tools: ['*'] },
  ]));
  assert.deepEqual(problems, ['policy.rules: the id "no-admin" is used twice; refusals name entries by id']);
});

test('rules without ids, or with ids of their own, are fine', () => {
  assert.deepEqual(unsupportedFeatures(config([{ access: 'deny', tools: ['up/a'] }, { access: 'deny', tools: ['up/b'] }, { id: 'x', access: 'allow', tools: ['*'] }])), []);
});
