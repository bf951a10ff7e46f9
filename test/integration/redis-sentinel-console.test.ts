// ioredis' other console lines, through Sentinel (store.sentinel): the sentinels' own connections send
// store.sentinel.password, and a sentinel that needs none answers as a server does (test/integration/
// redis-unneeded-password.test.ts); and with Sentinel ioredis keeps its ready check, whose INFO an ACL user
// without +info is refused, which ioredis then skips with a console.warn line ("Skipping the ready check
// because INFO command fails: …"), both at every connection, outside the one-JSON-object-per-line log.
// Each is now taken before ioredis prints it and said once in the log.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { storeUsedOnce } from '../helpers/store-console.js';

let primary: TestRedis;
let sentinel: TestRedis;
before(async () => {
  primary = await startRedis();
  const admin = new Redis(primary.url);
  try {
    await admin.call('ACL', 'SETUSER', 'noinfo', 'on', '>noinfo-pw', '~*', '+@all', '-info');
  } finally {
    admin.disconnect();
  }
  sentinel = await startRedis({ mode: 'sentinel', primaryPort: primary.port });
});
after(async () => {
  await sentinel.stop();
  await primary.stop();
});

test('through Sentinel, with a sentinel password it does not need and a user without +info: nothing printed, each said once in the log', { timeout: 60_000 }, async () => {
  const { lines, printed } = await storeUsedOnce({ kind: 'redis', url: 'redis://noinfo:noinfo-pw@ignored:1', keyPrefix: 'sentinel-console:', commandTimeoutMs: 2_000, sentinel: { name: 'primary', nodes: [`127.0.0.1:${sentinel.port}`], password: 'sentinel-unneeded-pw' } });
  assert.deepEqual(printed, [], 'ioredis printed nothing');
  assert.equal(lines.filter((l) => /sentinels do not need the password/.test(l.msg)).length, 1, JSON.stringify(lines));
  assert.equal(lines.filter((l) => /INFO/.test(l.msg) && /primary/.test(l.msg)).length, 1, JSON.stringify(lines));
  assert.doesNotMatch(JSON.stringify(lines), /sentinel-unneeded-pw|noinfo-pw/);
});
