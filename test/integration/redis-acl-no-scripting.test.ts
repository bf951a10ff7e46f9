// A Redis user whose ACL allows plain writes but not scripts (`-@scripting`, a common hardening): every
// write Gatehouse keeps a call's state with is a Lua script (the audit append among them), but the store's
// ping was a plain SET, which the user may run. So /readyz said ready and the store guard's probe marked
// the store up a second after each failure: governed calls passed the state stage, ran upstream, and were
// then answered 503 because their audit records could not be written. The ping now runs a script that
// writes in the audit chain's slot, as the audit append does: the store stays down, calls are refused
// before they run, and `gatehouse doctor` already fails such a user (its check writes through a script).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { openStore } from '../../src/store/open-store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway } from '../helpers/gateway.js';
import { assertRefusedWhileStoreTakesNoWrites, readyz, recordCall } from '../helpers/store-outage.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let up: CountingUpstream;
let redis: TestRedis;
let url: string;
before(async () => {
  up = await startCountingUpstream('modern');
  redis = await startRedis();
  const admin = new Redis(redis.url);
  try {
    await admin.call('ACL', 'SETUSER', 'noscripts', 'on', '>noscripts-pw', '~*', '+@all', '-@scripting');
  } finally {
    admin.disconnect();
  }
  url = `redis://noscripts:noscripts-pw@127.0.0.1:${redis.port}`;
});
after(async () => {
  await up.close();
  await redis.stop();
});

test('the store ping fails for a user that may not run scripts, naming NOPERM', async () => {
  const s = openStore({ kind: 'redis', url, keyPrefix: 'acl-ping:', commandTimeoutMs: 1_000 });
  try {
    await assert.rejects(s.ping(), (err: Error) => err.name === 'StoreUnavailableError' && /NOPERM/.test(err.message));
  } finally {
    await s.close();
  }
});

test('with a user that may not run scripts, /readyz says not ready and governed calls are refused before they run', { timeout: 60_000 }, async () => {
  const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], store: { kind: 'redis', url, keyPrefix: 'acl:', commandTimeoutMs: 1_000 } });
  try {
    await assertRefusedWhileStoreTakesNoWrites(gw, up, 'redis');
    assert.equal((await readyz(gw)).status, 503);
    const refused = await recordCall(gw, 'last');
    assert.equal(refused.json().error.data.code, 'GW_ERR_STATE_UNAVAILABLE', refused.text);
  } finally {
    await gw.close();
  }
});
