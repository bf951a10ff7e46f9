import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKey, hashKey, keyMatches } from '../../../src/auth/key-hash.js';

test('hash is sha256 hex with a scheme prefix; matching is exact', () => {
  assert.equal(hashKey('abc'), 'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  const key = generateKey();
  assert.match(key, /^gh_[A-Za-z0-9_-]{43}$/);
  assert.ok(keyMatches(key, hashKey(key)));
  assert.ok(!keyMatches(key + 'x', hashKey(key)));
  assert.ok(!keyMatches(key, 'sha256:short'));
  assert.notEqual(generateKey(), key);
});
