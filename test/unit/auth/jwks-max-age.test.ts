// Signing keys are trusted for `jwksMaxAgeSeconds`, then fetched again (docs/configuration.md); the
// `jwksMinRefreshSeconds` interval paces fetches for unknown key ids only. Until 3 December a max age below
// that interval left a withdrawn key trusted until the interval ran out. Time is moved with
// performance.now, which the cache reads.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JwksCache } from '../../../src/auth/jwks-cache.js';
import { createLogger } from '../../../src/log/logger.js';
import { startAuthServer } from '../../helpers/auth-server.js';

test('a key withdrawn from the set is not trusted past jwksMaxAgeSeconds, even within jwksMinRefreshSeconds', async () => {
  const as = await startAuthServer();
  as.published.push(await as.newKey('key-1'));
  const realNow = performance.now.bind(performance);
  let offset = 0;
  performance.now = () => realNow() + offset;
  const cache = new JwksCache({ issuer: as.issuer, jwksUri: as.jwksUri, algorithms: ['RS256'], maxAgeSeconds: 10, minRefreshSeconds: 60 }, createLogger('error', () => {}));
  try {
    await cache.getKeys('key-1', 'RS256');
    // key-1 withdrawn (leaked, say); 30 s later, three times the max age, still inside the 60 s interval.
    as.published.splice(0, as.published.length, await as.newKey('key-2'));
    offset = 30_000;
    await assert.rejects(cache.getKeys('key-1', 'RS256'), 'the withdrawn key is refused');
    assert.ok(await cache.getKeys('key-2', 'RS256'), 'the set was fetched again');
  } finally {
    performance.now = realNow;
    cache.close();
    await as.close();
  }
});
