// A reload that turns authentication off (auth.anonymous: true, accepted on a loopback listener only) must
// say so as start-up does: "authentication is off". Until 4 December a reload applied it with nothing but
// "config reloaded": every caller without a credential was served and the log gave no sign of it. The
// same line is logged when a reload turns it on, and a reload that keeps it on does not repeat it.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashKey } from '../../src/auth/key-hash.js';
import { validateConfigObject } from '../../src/config/load.js';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { post, rpc } from '../helpers/http.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const KEY = 'reload-anonymous-test-key-0123456789';

test('a reload that turns anonymous access on logs that authentication is off', async () => {
  const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
  cleanups.push(() => up.close());
  const store = { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-anonymous-')), 'g.db') };
  const raw = (anonymous: boolean, graceMs = 100) => ({ store, listen: { host: '127.0.0.1', port: 0 }, upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], auth: { anonymous, apiKeys: [{ id: 'ops', hash: hashKey(KEY) }] }, idempotency: { requireKeys: false }, shutdown: { graceMs } });
  const gw = await startGateway(raw(false));
  cleanups.push(() => gw.close());
  const warnings = (): number => gw.logs.filter((l) => l.level === 'warn' && l.msg === 'authentication is off: anonymous access on a loopback listener').length;
  assert.equal((await post(gw.url, rpc(1, 'tools/list'))).status, 401);
  assert.equal(warnings(), 0);

  assert.deepEqual(await gw.gateway.reload(validateConfigObject(raw(true))), []);
  assert.equal((await post(gw.url, rpc(2, 'tools/list'))).status, 200, 'served without a credential');
  assert.equal(warnings(), 1, JSON.stringify(gw.logs));

  // Kept on: nothing new to say. Turned off and on again: said again.
  assert.deepEqual(await gw.gateway.reload(validateConfigObject(raw(true, 200))), []);
  assert.equal(warnings(), 1);
  assert.deepEqual(await gw.gateway.reload(validateConfigObject(raw(false))), []);
  assert.deepEqual(await gw.gateway.reload(validateConfigObject(raw(true))), []);
  assert.equal(warnings(), 2);
});
