// The seal of an upstream's requestState (src/auth/request-state-seal.ts; 2026-07-28 mrtr.mdx §Server
// Requirements 4–5: integrity, the principal, a short expiry, the originating request).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RequestStateSeal, type StateBinding } from '../../../src/auth/request-state-seal.js';

const ALICE: StateBinding = { caller: 'api_key\u0000\u0000key:alice', method: 'tools/call', target: 'ask', arguments: 'digest-1' };
const SECRET = 'a-shared-secret-of-at-least-32-characters';

test('what is sealed opens for the same binding only, and gives back the exact state', () => {
  const seal = new RequestStateSeal(SECRET, 60_000);
  const state = 'opaque ✓ "state" with.dots.and spaces';
  const sealed = seal.seal(state, ALICE);
  assert.deepEqual(seal.open(sealed, ALICE), { ok: true, state });
  for (const [field, value] of [['caller', 'api_key\u0000\u0000key:bob'], ['method', 'prompts/get'], ['target', 'other'], ['arguments', 'digest-2']] as const) {
    assert.deepEqual(seal.open(sealed, { ...ALICE, [field]: value }), { ok: false, reason: 'invalid' }, field);
  }
});

test('fields cannot be shifted into one another', () => {
  const seal = new RequestStateSeal(SECRET, 60_000);
  const sealed = seal.seal('s', { ...ALICE, target: 'a', arguments: 'b' });
  assert.equal(seal.open(sealed, { ...ALICE, target: 'a"', arguments: 'b' }).ok, false);
  assert.equal(seal.open(sealed, { ...ALICE, target: '', arguments: 'ab' }).ok, false);
});

test('an expired state is refused as expired, and only once its MAC holds', () => {
  let now = 1_700_000_000_000;
  const seal = new RequestStateSeal(SECRET, 60_000, () => now);
  const sealed = seal.seal('s', ALICE);
  now += 59_000;
  assert.equal(seal.open(sealed, ALICE).ok, true);
  now += 2_000;
  assert.deepEqual(seal.open(sealed, ALICE), { ok: false, reason: 'expired' });
  // A forged, later expiry does not pass as anything but invalid.
  assert.deepEqual(seal.open(sealed.replace(/^gh1\.[0-9a-z]+\./, `gh1.${Math.ceil(now / 1000 + 600).toString(36)}.`), ALICE), { ok: false, reason: 'invalid' });
});

test('replicas that share the configured key open each other\'s seals; another key does not', () => {
  const sealed = new RequestStateSeal(SECRET, 60_000).seal('s', ALICE);
  assert.equal(new RequestStateSeal(SECRET, 60_000).open(sealed, ALICE).ok, true);
  assert.deepEqual(new RequestStateSeal(`${SECRET}-rotated`, 60_000).open(sealed, ALICE), { ok: false, reason: 'invalid' });
});

test('without a configured key, every seal of one process shares its random key (a reload keeps the states good)', () => {
  const sealed = new RequestStateSeal(undefined, 60_000).seal('s', ALICE);
  assert.equal(new RequestStateSeal(undefined, 60_000).open(sealed, ALICE).ok, true);
  assert.equal(new RequestStateSeal(SECRET, 60_000).open(sealed, ALICE).ok, false);
});

test('strings that are not seals are told apart from seals that fail', () => {
  const seal = new RequestStateSeal(SECRET, 60_000);
  for (const s of ['', 'gh1.', 'gh1.abc', 'gh1.abc.short.s', 'v1.payload.mac', 'upstream-state']) assert.deepEqual(seal.open(s, ALICE), { ok: false, reason: 'not_sealed' }, s);
});
