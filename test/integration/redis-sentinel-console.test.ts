// ioredis' other console lines, through Sentinel (store.sentinel): the sentinels' own connections send
// store.sentinel.password, and a sentinel that needs none answers as a server does (test/integration/
// redis-unneeded-password.test.ts); and with Sentinel ioredis keeps its ready check, whose INFO an ACL user
// without +info is refused, which ioredis then skips with a console.warn line ("Skipping the ready check
// because INFO command fails: …"), both at every connection, outside the one-JSON-object-per-line log.
// Each is now taken before ioredis prints it and said once in the log.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/log/logger.js';
import { openStore } from '../../src/store/open-store.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

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
  const lines: Array<{ level: string; msg: string }> = [];
  const log = createLogger('info', (line) => void lines.push(JSON.parse(line) as { level: string; msg: string }));
  const printed: unknown[][] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => void printed.push(args);
  const s = openStore({ kind: 'redis', url: 'redis://noinfo:noinfo-pw@ignored:1', keyPrefix: 'sentinel-console:', commandTimeoutMs: 2_000, sentinel: { name: 'primary', nodes: [`127.0.0.1:${sentinel.port}`], password: 'sentinel-unneeded-pw' } }, log);
  try {
    await s.ping();
    await s.appendAudit({ time: new Date().toISOString(), callId: 'c1', runId: 'r1', subject: 'alice', method: 'tools/call', outcome: 'ok', latencyMs: 1 });
  } finally {
    await s.close();
    console.warn = warn;
  }
  assert.deepEqual(printed, [], 'ioredis printed nothing');
  assert.equal(lines.filter((l) => /sentinels do not need the password/.test(l.msg)).length, 1, JSON.stringify(lines));
  assert.equal(lines.filter((l) => /INFO/.test(l.msg) && /primary/.test(l.msg)).length, 1, JSON.stringify(lines));
  assert.doesNotMatch(JSON.stringify(lines), /sentinel-unneeded-pw|noinfo-pw/);
});
