// Config reload (DESIGN.md §3): the file is watched; a valid new version replaces the running one
// atomically, an invalid one is refused and logged and the old one stays; the listener is static.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jsonResult, sleep, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { serveCli, until } from '../helpers/cli.js';
import { post, rpc } from '../helpers/http.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('a changed file is applied without a restart; a broken one is refused and the running config stays', async () => {
  const a = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { who: 'A' }));
  const b = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { who: 'B' }));
  cleanups.push(() => a.close(), () => b.close());
  const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-reload-')), 'gatehouse.yaml');
  const config = (url: string, extra = '') => `listen: { port: 8080 }\nupstreams: [{ name: up, url: "${url}", era: legacy }]\nauth: { anonymous: true }\nshutdown: { graceMs: 200 }\n${extra}`;
  writeFileSync(file, config(a.url));
  const gw = await serveCli(['--config', file, '--port', '0']);
  cleanups.push(() => gw.stop());
  const who = async () => (await post(gw.url, rpc(1, 'tools/list'))).json().result?.who as string | undefined;
  assert.equal(await who(), 'A');

  writeFileSync(file, config(b.url));
  assert.ok(await until(async () => (await who()) === 'B'), 'the new upstream took over');
  // Log lines go out in batches, right after the turn that wrote them.
  assert.ok(await until(async () => /"msg":"config reloaded"/.test(gw.stderr())), gw.stderr());

  writeFileSync(file, config(a.url, 'listen_typo: true\n'));
  assert.ok(await until(() => /"msg":"config reload refused; the running config stays".*unknown key/.test(gw.stderr())), gw.stderr());
  assert.equal(await who(), 'B', 'still serving the last good config');

  // The command line moved the port to a free one; a reload keeps that listener rather than the file's.
  writeFileSync(file, config(a.url).replace('port: 8080', 'port: 8081'));
  assert.ok(await until(async () => (await who()) === 'A'));
  assert.ok(await until(() => /listen changes take effect only after a restart/.test(gw.stderr())), gw.stderr());
  assert.equal(await gw.stop(), 0);
});

test('log.requests follows a reload: the request line stops when it is turned off and comes back when it is turned on, and the upstreams are kept', async () => {
  const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { ok: true }));
  cleanups.push(() => up.close());
  const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-reload-log-')), 'gatehouse.yaml');
  // Connections the upstream accepted: a rebuilt runtime opens its own, a kept one goes on with its pool's.
  let connections = 0;
  up.server.on('connection', () => connections++);
  const config = (requests: boolean, header = 'a') => `upstreams: [{ name: up, url: "${up.url}", era: legacy, headers: { X-Deployment: ${header} } }]\nauth: { anonymous: true }\nshutdown: { graceMs: 200 }\nlog: { format: json, requests: ${requests} }\n`;
  writeFileSync(file, config(true));
  const gw = await serveCli(['--config', file, '--port', '0']);
  cleanups.push(() => gw.stop());
  const requestLines = (): number => gw.stderr().split('\n').filter((l) => l.includes('"msg":"request"')).length;
  const call = async (): Promise<void> => {
    assert.equal((await post(gw.url, rpc(1, 'tools/list'))).status, 200);
  };

  await call();
  assert.ok(await until(() => requestLines() === 1), gw.stderr());
  // The line `serve` writes through its batched stderr: one JSON object with every field, in order.
  const line = JSON.parse(gw.stderr().split('\n').find((l) => l.includes('"msg":"request"'))!) as Record<string, unknown>;
  assert.deepEqual(Object.keys(line), ['level', 'time', 'msg', 'callId', 'method', 'era', 'subject', 'upstream', 'status', 'outcome', 'durationMs']);
  assert.deepEqual({ method: line.method, era: line.era, upstream: line.upstream, status: line.status, outcome: line.outcome }, { method: 'tools/list', era: 'legacy', upstream: 'up', status: 200, outcome: 'ok' });
  assert.equal(typeof line.durationMs, 'number');
  const connected = connections;
  assert.ok(connected >= 1);

  writeFileSync(file, config(false));
  assert.ok(await until(() => /"msg":"config reloaded"/.test(gw.stderr())), gw.stderr());
  const before = requestLines();
  for (let i = 0; i < 5; i++) await call();
  await sleep(200); // lines go out in batches of at most a few milliseconds
  assert.equal(requestLines(), before, 'no request line while log.requests is off');
  // Only the log changed: the upstream connections (and the catalog, sessions, auth) were kept.
  assert.equal(connections, connected, 'a log-only reload kept the upstream pool');

  writeFileSync(file, config(true));
  assert.ok(await until(() => gw.stderr().split('"msg":"config reloaded"').length === 3), gw.stderr());
  await call();
  assert.ok(await until(() => requestLines() === before + 1), gw.stderr());
  assert.equal(connections, connected, 'turning the line back on kept the pool too');

  // A change to what the upstream is sent builds it anew, with its own connections: the count above can tell.
  writeFileSync(file, config(true, 'b'));
  assert.ok(await until(() => gw.stderr().split('"msg":"config reloaded"').length === 4), gw.stderr());
  await call();
  assert.ok(connections > connected, 'a reload that changes the upstream\'s headers rebuilds it');
  // The store came from --store (serveCli), not the file: a reload does not take that for a store change.
  assert.doesNotMatch(gw.stderr(), /store changes take effect only after a restart/);
  assert.equal(await gw.stop(), 0);
});

test('SIGHUP reads the config file at once: an unchanged file is said to be so, a changed one is applied, and the process lives on', async () => {
  const a = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { who: 'A' }));
  const b = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { who: 'B' }));
  cleanups.push(() => a.close(), () => b.close());
  const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-sighup-')), 'gatehouse.yaml');
  const config = (url: string, graceMs: number) => `upstreams: [{ name: up, url: "${url}", era: legacy }]\nauth: { anonymous: true }\nshutdown: { graceMs: ${graceMs} }\nlog: { format: json }\n`;
  writeFileSync(file, config(a.url, 200));
  const gw = await serveCli(['--config', file, '--port', '0']);
  cleanups.push(() => gw.stop());
  const who = async () => (await post(gw.url, rpc(1, 'tools/list'))).json().result?.who as string | undefined;
  const count = (text: string): number => gw.stderr().split(text).length - 1;
  assert.equal(await who(), 'A');

  // Node's default for SIGHUP is to exit; serve answers it instead.
  gw.child.kill('SIGHUP');
  assert.ok(await until(() => count('"msg":"config file unchanged; nothing to reload"') === 1), gw.stderr());
  assert.equal(await who(), 'A');

  // A changed file: the signal applies it before the next poll, unless that poll came first (then the
  // signal finds it unchanged, and the step is tried again with another change).
  let bySignal = false;
  for (let attempt = 1; attempt <= 3 && !bySignal; attempt++) {
    const unchangedBefore = count('"msg":"config file unchanged; nothing to reload"');
    const reloadsBefore = count('"msg":"config reloaded"');
    writeFileSync(file, config(b.url, 200 + attempt));
    gw.child.kill('SIGHUP');
    assert.ok(await until(() => count('"msg":"config reloaded"') === reloadsBefore + 1), gw.stderr());
    await sleep(100);
    bySignal = count('"msg":"config file unchanged; nothing to reload"') === unchangedBefore;
  }
  assert.ok(bySignal, 'the signal applied a changed file');
  assert.equal(await who(), 'B');
  assert.equal(count('"signal":"SIGHUP"') >= 2, true);
  assert.equal(await gw.stop(), 0);
});

