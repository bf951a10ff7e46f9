// An API key's `expires`: a date or RFC 3339 time that names no real day or time is refused with the key's
// id, not read as the day JavaScript's Date rolls it over to (2026-02-30 is no 2 March).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { expiryOf } from '../../../src/config/expiry.js';
import { validateConfigObject } from '../../../src/config/load.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';
import { hashKey } from '../../../src/auth/key-hash.js';

describe('expiryOf', () => {
  it('a date is good through that whole day, UTC; a time is that instant', () => {
    assert.equal(expiryOf('2028-02-29'), Date.UTC(2028, 2, 1));
    assert.equal(expiryOf('2026-12-31'), Date.UTC(2027, 0, 1));
    assert.equal(expiryOf('2026-06-01T12:30:00Z'), Date.UTC(2026, 5, 1, 12, 30));
    assert.equal(expiryOf('2026-06-01 12:30'), Date.UTC(2026, 5, 1, 12, 30));
    assert.equal(expiryOf('2026-06-01T12:30:15.5+02:00'), Date.UTC(2026, 5, 1, 10, 30, 15, 500));
    assert.equal(expiryOf('2026-06-01t23:59:59-11:30'), Date.UTC(2026, 5, 2, 11, 29, 59));
  });

  it('a day or time that does not exist is no date', () => {
    for (const bad of ['2026-02-29', '2026-02-30', '2026-04-31', '2026-13-01', '2026-00-10', '2026-01-00', '2026-02-30T10:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01T23:60Z', '2026-01-01T10:00:60Z', '2026-01-01T10:00:00+24:00', '2026-01-01T10:00:00+01:60', 'tomorrow']) {
      assert.equal(expiryOf(bad), -Infinity, bad);
    }
  });
});

describe('auth.apiKeys[].expires in the config checks', () => {
  const config = (expires: string) =>
    validateConfigObject({ upstreams: [{ name: 'u', url: 'http://127.0.0.1:1/mcp' }], auth: { apiKeys: [{ id: 'ci-bot', hash: hashKey('gh_ci_bot_key_0123456789abcdefghijklmn'), expires }] } }, 'test');

  it('an impossible date is refused, naming the key', () => {
    const problems = unsupportedFeatures(config('2026-02-30'));
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0]!, /auth\.apiKeys\[0\]\.expires/);
    assert.match(problems[0]!, /"ci-bot"/);
    assert.match(problems[0]!, /2026-02-30/);
  });

  it('a real one passes', () => {
    assert.deepEqual(unsupportedFeatures(config('2028-02-29')), []);
  });
});
