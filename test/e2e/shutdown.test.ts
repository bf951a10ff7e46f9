// SIGTERM: stop accepting, let in-flight requests finish within shutdown.graceMs, then exit 0.
// Runs the built dist/main.js against a slow fake upstream.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'undici';
import { jsonResult, sleep, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { serveCli } from '../helpers/cli.js';
import { post, rpc } from '../helpers/http.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('an in-flight request completes after SIGTERM; new connections are refused; exit 0', async () => {
  const up = await startFakeUpstream(async (_req, res, body) => {
    await sleep(1500);
    jsonResult(res, body, { content: [{ type: 'text', text: 'slow but done' }] });
  });
  cleanups.push(() => up.close());
  const gw = await serveCli(['--upstream', up.url, '--port', '0']);
  cleanups.push(() => gw.stop());
  const inFlight = post(gw.url, rpc(1, 'tools/call', { name: 'slow' }));
  await sleep(300);
  gw.child.kill('SIGTERM');
  await sleep(300);
  const late = new Client(new URL(gw.url).origin);
  await assert.rejects(late.request({ path: '/mcp', method: 'POST', body: rpc(2, 'tools/list'), headers: { 'content-type': 'application/json' } }), /ECONNREFUSED/);
  await late.close();
  const res = await inFlight;
  assert.equal(res.status, 200);
  assert.equal(res.json().result.content[0].text, 'slow but done');
  assert.equal(await gw.exited, 0);
  assert.match(gw.stderr(), /"msg":"shutting down: draining in-flight requests","inFlight":1/);
});

test('past shutdown.graceMs the remaining requests are cut and the process still exits 0', async () => {
  const up = await startFakeUpstream(() => {
    /* never answers */
  });
  cleanups.push(() => up.close());
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-shutdown-'));
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(file, `listen: { port: 0 }\nupstreams: [{ name: stuck, url: "${up.url}" }]\nauth: { anonymous: true }\nshutdown: { graceMs: 300 }\n`);
  const gw = await serveCli(['--config', file]);
  cleanups.push(() => gw.stop());
  const inFlight = post(gw.url, rpc(1, 'tools/call', { name: 'stuck' })).then(
    () => 'answered',
    () => 'cut',
  );
  await sleep(200);
  gw.child.kill('SIGTERM');
  const exit = await Promise.race([gw.exited, sleep(8000).then(() => 'still running')]);
  assert.equal(exit, 0);
  assert.equal(await inFlight, 'cut');
  assert.match(gw.stderr(), /grace period over/);
});
