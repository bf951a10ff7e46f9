import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKey, hashKey } from '../../../src/auth/key-hash.js';
import { ApiKeys } from '../../../src/auth/api-keys.js';

test('hash is sha256 hex with a scheme prefix; a key is found by its exact hash only', () => {
  assert.equal(hashKey('abc'), 'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  const key = generateKey();
  assert.match(key, /^gh_[A-Za-z0-9_-]{43}$/);
  assert.notEqual(generateKey(), key);
  const keys = new ApiKeys([{ id: 'k', hash: hashKey(key), scopes: ['read'] }]);
  const accepted = keys.verify(key);
  assert.ok(accepted?.ok);
  assert.equal(accepted.principal.subject, 'key:k');
  assert.equal(keys.verify(key + 'x'), undefined);
  assert.equal(keys.verify(key.slice(0, -1)), undefined);
  // Made once per key: every call with it shares one principal, which nothing can change.
  assert.equal(keys.verify(key), accepted);
  assert.ok(Object.isFrozen(accepted.principal));
});
