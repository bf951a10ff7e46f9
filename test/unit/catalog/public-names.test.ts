// The safe-name rule: deterministic, order-independent, collision-free public names from refs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assignPublicNames, digestOf, type Ref } from '../../../src/catalog/public-names.js';

const SAFE = /^[A-Za-z0-9_-]{1,64}$/;
/** `upstreams`: how many are configured; their order is that of the refs' first mention (then made-up names). */
const names = (refs: Ref[], upstreams = 1, mode: 'auto' | 'always' | 'never' = 'auto') => {
  const order = [...new Set(refs.map((r) => r.upstream))];
  while (order.length < upstreams) order.push(`other-${order.length}`);
  return assignPublicNames(refs, mode, order);
};

test('safe names stay as they are; unsafe characters are replaced and the digest marks the change only on collision', () => {
  const m = names([{ upstream: 'crm', name: 'search' }, { upstream: 'crm', name: 'météo' }, { upstream: 'crm', name: 'files/read' }]);
  assert.equal(m.get('crm/search'), 'search');
  assert.equal(m.get('crm/météo'), 'm_t_o');
  assert.equal(m.get('crm/files/read'), 'files_read');
});

test('prefix: auto adds the upstream only when there are several; always and never are honoured', () => {
  assert.equal(names([{ upstream: 'crm', name: 'search' }], 1).get('crm/search'), 'search');
  assert.equal(names([{ upstream: 'crm', name: 'search' }], 2).get('crm/search'), 'crm_search');
  assert.equal(names([{ upstream: 'crm', name: 'search' }], 1, 'always').get('crm/search'), 'crm_search');
  assert.equal(names([{ upstream: 'crm', name: 'search' }], 3, 'never').get('crm/search'), 'search');
});

test('a collision keeps the already-safe original and digests the others', () => {
  const m = names([{ upstream: 'u', name: 'get_user' }, { upstream: 'u', name: 'get.user' }, { upstream: 'u', name: 'get user' }]);
  assert.equal(m.get('u/get_user'), 'get_user');
  assert.equal(m.get('u/get.user'), `get_user_${digestOf({ upstream: 'u', name: 'get.user' })}`);
  assert.equal(m.get('u/get user'), `get_user_${digestOf({ upstream: 'u', name: 'get user' })}`);
  // Same names from two upstreams without a prefix collide too: the upstream first in the config keeps it.
  const n = names([{ upstream: 'a', name: 'search' }, { upstream: 'b', name: 'search' }], 2, 'never');
  assert.equal(n.get('a/search'), 'search');
  assert.equal(n.get('b/search'), `search_${digestOf({ upstream: 'b', name: 'search' })}`);
});

// Two already-safe names that collide (without a prefix, or with one: `a/b_c` and `a_b/c` are both `a_b_c`)
// came from different upstreams, and until 5 December neither kept the name: both got digests, so the name
// of the one that answered first changed when the other first answered (a member down since the start).
test('several already-safe names: the upstream first in the config keeps it, whatever order the refs come in', () => {
  const refs = [{ upstream: 'a_b', name: 'c' }, { upstream: 'a', name: 'b_c' }];
  for (const list of [refs, [...refs].reverse()]) {
    const m = assignPublicNames(list, 'auto', ['a', 'a_b']);
    assert.equal(m.get('a/b_c'), 'a_b_c');
    assert.equal(m.get('a_b/c'), `a_b_c_${digestOf({ upstream: 'a_b', name: 'c' })}`);
  }
  const swapped = assignPublicNames(refs, 'auto', ['a_b', 'a']);
  assert.equal(swapped.get('a_b/c'), 'a_b_c');
  assert.equal(swapped.get('a/b_c'), `a_b_c_${digestOf({ upstream: 'a', name: 'b_c' })}`);
  // The one that was alone keeps its name when the later upstream's tool joins.
  assert.equal(assignPublicNames([{ upstream: 'a', name: 'b_c' }], 'auto', ['a', 'a_b']).get('a/b_c'), 'a_b_c');
});

test('a name over 64 characters is truncated before a digest, to exactly 64', () => {
  const long = 'x'.repeat(100);
  const m = names([{ upstream: 'u', name: long }]);
  const name = m.get(`u/${long}`)!;
  assert.equal(name.length, 64);
  assert.ok(name.endsWith(`_${digestOf({ upstream: 'u', name: long })}`));
});

test('independent of list order; adding a tool renames nothing it does not collide with; all names safe and unique', () => {
  const refs: Ref[] = [
    { upstream: 'a', name: 'x.y' },
    { upstream: 'a', name: 'x_y' },
    { upstream: 'b', name: 'x y' },
    { upstream: 'b', name: 'ünïcode' },
    { upstream: 'a', name: 'z'.repeat(70) },
    { upstream: 'b', name: 'plain' },
  ];
  const first = names(refs, 2);
  const shuffled = names([...refs].reverse(), 2);
  assert.deepEqual([...first.entries()].sort(), [...shuffled.entries()].sort());
  const grown = names([...refs, { upstream: 'b', name: 'another' }], 2);
  for (const ref of refs) assert.equal(grown.get(`${ref.upstream}/${ref.name}`), first.get(`${ref.upstream}/${ref.name}`));
  const all = [...grown.values()];
  for (const n of all) assert.match(n, SAFE);
  assert.equal(new Set(all).size, all.length);
});

// Several upstreams (prefix auto, the default): a client that cached `crm_get_user` must still reach it
// after the upstream adds `get.user`, whose name sanitizes to the same prefixed name. Until 4 December,
// in prefixed mode no ref counted as the owner of the name, so both were given digests and the cached
// name answered -32602 (2026-07-28/server/tools.mdx §Tool Names: names unique per server; the catalog
// promises that adding a tool renames nothing that was already safe).
test('prefixed: adding a tool that sanitizes to an existing prefixed name never renames the existing one', () => {
  const before = names([{ upstream: 'crm', name: 'get_user' }, { upstream: 'mail', name: 'send' }], 2);
  assert.equal(before.get('crm/get_user'), 'crm_get_user');
  const after = names([{ upstream: 'crm', name: 'get_user' }, { upstream: 'crm', name: 'get.user' }, { upstream: 'mail', name: 'send' }], 2);
  assert.equal(after.get('crm/get_user'), 'crm_get_user', 'the already-safe tool keeps its name');
  assert.equal(after.get('crm/get.user'), `crm_get_user_${digestOf({ upstream: 'crm', name: 'get.user' })}`);
  // The same with prefix: always and one upstream.
  const always = assignPublicNames([{ upstream: 'u', name: 'a_b' }, { upstream: 'u', name: 'a.b' }], 'always', ['u']);
  assert.equal(always.get('u/a_b'), 'u_a_b');
  assert.match(always.get('u/a.b')!, /^u_a_b_[0-9a-f]{8}$/);
  // A 64-character prefixed name that fits keeps it beside a colliding unsafe one.
  const sixtyFour = 'x'.repeat(60);
  const fit = names([{ upstream: 'crm', name: sixtyFour }, { upstream: 'crm', name: `${'x'.repeat(59)}.` }], 2);
  assert.equal(fit.get(`crm/${sixtyFour}`)!.length, 64);
  assert.equal(fit.get(`crm/${sixtyFour}`), `crm_${sixtyFour}`);
});
