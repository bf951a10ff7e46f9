// `gatehouse audit verify` (and every store operation of the gateway) on a Redis that cannot be reached:
// the command failed with ioredis's "Stream isn't writeable and enableOfflineQueue options is false", which
// says nothing of Redis being down, nor where. The connection's own error is kept and named instead
// ("connect ECONNREFUSED 127.0.0.1:…"), still without the URL's password.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { auditCommand } from '../../../src/cli/audit.js';
import { freePort } from '../../helpers/auth-server.js';

test('verify on a Redis nobody listens for names the connection error, not the client queue', { timeout: 30_000 }, async () => {
  const port = await freePort();
  const config = join(mkdtempSync(join(tmpdir(), 'gatehouse-redis-down-')), 'gatehouse.yaml');
  writeFileSync(config, `upstreams:\n  - name: x\n    url: http://127.0.0.1:1/mcp\nstore:\n  kind: redis\n  url: redis://:s3cret-pass@127.0.0.1:${port}/0\n`);
  const out: string[] = [];
  const err: string[] = [];
  const code = await auditCommand(['verify', '--config', config], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
  const text = err.join('');
  assert.equal(code, 1, text);
  assert.equal(out.join(''), '');
  assert.doesNotMatch(text, /Stream isn't writeable|enableOfflineQueue/);
  assert.match(text, new RegExp(`Redis store \\(audit\\): not connected to Redis: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}`));
  assert.doesNotMatch(text, /s3cret-pass/);
});
