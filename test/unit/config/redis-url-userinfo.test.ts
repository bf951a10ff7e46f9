// A Redis password with a literal % ("50%off") written into store.url as it is: the URL parses, so
// check-config said ok, and the store, which percent-decodes the URL's user name and password as URLs
// require, threw "URI malformed" when the gateway was built: `serve` exited 1 with those two words and
// nothing naming store.url, and doctor reported "URI malformed" with the hint "is Redis up and reachable
// from here?". The semantic checks now refuse it by key (without repeating the credential), so
// check-config, start-up, reloads and doctor all say what to write instead.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkConfigCommand } from '../../../src/cli/check-config.js';
import { validateConfigObject } from '../../../src/config/load.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';

const config = (url: string) => validateConfigObject({ upstreams: [{ name: 'up', url: 'http://127.0.0.1:3001/mcp' }], auth: { anonymous: true }, store: { kind: 'redis', url } });

describe('store.url credentials that do not percent-decode', () => {
  it('a password with a lone % is a problem naming store.url and %25, without the password', () => {
    const problems = unsupportedFeatures(config('redis://:50%off-secret@127.0.0.1:6379'));
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0]!, /^store\.url: /);
    assert.match(problems[0]!, /password/);
    assert.match(problems[0]!, /%25/);
    assert.ok(!problems[0]!.includes('off-secret'), problems[0]);
  });

  it('a user name with one too', () => {
    const problems = unsupportedFeatures(config('rediss://ops%zz:pw@127.0.0.1:6379'));
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0]!, /^store\.url: .*user name/);
  });

  it('a password percent-encoded as URLs require, or a ${...} still to be read, is fine', () => {
    assert.deepEqual(unsupportedFeatures(config('redis://:50%25off%40secret@127.0.0.1:6379')), []);
    assert.deepEqual(unsupportedFeatures(config('redis://:${env:REDIS_PASSWORD}@127.0.0.1:6379')), []);
  });

  it('check-config exits 1 on it instead of printing ok', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-redis-url-')), 'gatehouse.yaml');
    writeFileSync(file, 'upstreams:\n  - { name: up, url: "http://127.0.0.1:3001/mcp" }\nauth: { anonymous: true }\nstore: { kind: redis, url: "redis://:50%off-secret@127.0.0.1:6379" }\n');
    const out: string[] = [];
    const err: string[] = [];
    const code = await checkConfigCommand([file], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
    assert.equal(code, 1, out.join(''));
    assert.match(err.join(''), /store\.url: /);
    assert.ok(!err.join('').includes('off-secret'), err.join(''));
  });
});
