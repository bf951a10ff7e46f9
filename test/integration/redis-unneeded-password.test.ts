// A Redis URL with a password for a server that needs none (no requirepass: the default user has
// `nopass`). Redis answers AUTH with an error, and ioredis carries on unauthenticated, as it should, but it
// says so with console.warn: a bare "[WARN] This Redis server's `default` user does not require a
// password, but a password was supplied" line in the gateway's stderr, among its one-JSON-object-per-line
// log (DESIGN.md: structured logs), which a log shipper parsing each line as JSON drops or flags, at every
// connection and reconnection. Gatehouse now takes that answer itself and logs it in its own words, once
// per store, as a JSON line at warn (never the password).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveCli } from '../helpers/cli.js';
import { modernRequest, post } from '../helpers/http.js';
import { startRedis } from '../helpers/redis.js';
import { storeUsedOnce } from '../helpers/store-console.js';
import { countingUpstreamAndRedis } from '../helpers/upstream-and-redis.js';

const fixture = countingUpstreamAndRedis();
const PASSWORD = 'unneeded-pw-7f3a';

test('a password the Redis server does not need: stderr stays one JSON object per line, and the log says so without the password', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-unneeded-pw-'));
  const file = join(dir, 'gatehouse.yaml');
  const url = `redis://:${PASSWORD}@127.0.0.1:${fixture.redis.port}`;
  writeFileSync(file, JSON.stringify({ listen: { host: '127.0.0.1', port: 0 }, auth: { anonymous: true }, upstreams: [{ name: 'up', url: fixture.up.url, era: 'modern' }], store: { kind: 'redis', url, keyPrefix: 'unneeded-pw:' } }));
  const gw = await serveCli(['--config', file], { configStore: true });
  try {
    // A governed call: the store is used (and works, unauthenticated as the server allows).
    const req = modernRequest(1, 'tools/call', { name: 'record', arguments: { item: 'with-unneeded-password' }, _meta: { idempotencyKey: 'unneeded-pw-0001' } });
    const res = await post(gw.url, req.body, req.headers);
    assert.equal(res.status, 200, res.text);
    assert.match(res.json().result.content[0].text, /^recorded with-unneeded-password/);
  } finally {
    await gw.stop();
  }
  const lines = gw.stderr().split('\n').filter((l) => l.trim() !== '');
  for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), `a stderr line that is not JSON: ${line}`);
  assert.doesNotMatch(gw.stderr() + gw.stdout(), new RegExp(PASSWORD), 'the password is never printed');
  const told = lines.map((l) => JSON.parse(l) as { level: string; msg: string; store?: string }).filter((l) => /does not need the password/.test(l.msg));
  assert.equal(told.length, 1, `said once, in Gatehouse's words:\n${gw.stderr()}`);
  assert.equal(told[0]!.level, 'warn');
  assert.equal(told[0]!.store, 'redis');
});

// A Cluster: each node's connection, and the connection ioredis makes (Redis#duplicate) to ask a node for
// its slots, at start and on every refresh of them, sends the password too.
test('a Cluster that needs no password: no console line from any connection, one warning in the log', { timeout: 60_000 }, async () => {
  const cluster = await startRedis({ mode: 'cluster' });
  const { lines, printed } = await storeUsedOnce({ kind: 'redis', url: `redis://:${PASSWORD}@ignored:1`, keyPrefix: 'unneeded-pw-cluster:', commandTimeoutMs: 2_000, cluster: { nodes: [`127.0.0.1:${cluster.port}`] } }).finally(() => cluster.stop());
  assert.deepEqual(printed, [], 'ioredis printed nothing');
  assert.equal(lines.filter((l) => /does not need the password/.test(l.msg)).length, 1, JSON.stringify(lines));
});
