// Which tools the doctor reports as renamed, and why: the names are the catalog's (assignPublicNames), the
// reasons are read off the difference.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planNames } from '../../../src/doctor/tool-names.js';

const refs = (upstream: string, ...names: string[]): Array<{ upstream: string; name: string }> => names.map((name) => ({ upstream, name }));

test('one upstream: safe names are kept, unsafe characters are replaced, a long name is cut and digested', () => {
  const long = 'x'.repeat(70);
  const plan = planNames(refs('crm', 'search', 'get.contact', long), 'auto', ['crm']);
  assert.equal(plan.prefixed, false);
  assert.deepEqual(plan.renamed.map((r) => [r.name, r.publicName]), [['get.contact', 'get_contact'], [long, plan.names.get(`crm/${long}`)]]);
  assert.deepEqual(plan.renamed[0]?.reasons, ['unsafe characters "." (only letters, digits, "_" and "-" are safe)']);
  assert.match(plan.renamed[1]?.publicName ?? '', /^x{55}_[0-9a-f]{8}$/);
  assert.deepEqual(plan.renamed[1]?.reasons, ['longer than 64 characters (70)']);
});

test('a collision: the tool already named so keeps its name, the other is digested and says with whom it collides', () => {
  const plan = planNames(refs('fs', 'read_file', 'read.file'), 'never', ['fs']);
  assert.deepEqual(plan.renamed.map((r) => r.name), ['read.file']);
  assert.match(plan.renamed[0]?.publicName ?? '', /^read_file_[0-9a-f]{8}$/);
  assert.deepEqual(plan.renamed[0]?.reasons.slice(1), ['collides with fs/read_file as "read_file"']);
});

test('a prefix alone is no rename; the same tool name on two upstreams without a prefix: the later upstream in the config is renamed', () => {
  const prefixed = planNames([...refs('a', 'search'), ...refs('b', 'search')], 'auto', ['a', 'b']);
  assert.equal(prefixed.prefixed, true);
  assert.deepEqual(prefixed.renamed, []);
  assert.equal(prefixed.names.get('b/search'), 'b_search');
  const bare = planNames([...refs('a', 'search'), ...refs('b', 'search')], 'never', ['a', 'b']);
  assert.deepEqual(bare.renamed.map((r) => [r.upstream, r.reasons]), [['b', ['collides with a/search as "search"']]]);
  // The config's order decides, not the order the tools were read in.
  const reordered = planNames([...refs('a', 'search'), ...refs('b', 'search')], 'never', ['b', 'a']);
  assert.deepEqual(reordered.renamed.map((r) => [r.upstream, r.reasons]), [['a', ['collides with b/search as "search"']]]);
});
