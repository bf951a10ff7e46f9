// Secrets kept in files (`${file:PATH}`, a mounted Kubernetes Secret) are rotated by replacing the file, and
// the config's own text stays the same. The watcher reads those files with the config (DESIGN.md §3, hot
// reload), so a rotated upstream credential or admin token applies without a restart, and the log names
// the file, never its content.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { serveCli, until } from '../helpers/cli.js';
import { post, rpc } from '../helpers/http.js';
import { replaceLikeSecretVolume } from '../helpers/secret-volume.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('an upstream credential read from a file is rotated by replacing the file: the next calls carry the new one', async () => {
  const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
  cleanups.push(() => up.close());
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-rotate-'));
  const file = join(dir, 'gatehouse.yaml');
  const secret = join(dir, 'upstream-token');
  replaceLikeSecretVolume(secret, 'first-upstream-credential\n');
  writeFileSync(file, `upstreams: [{ name: up, url: "${up.url}", era: legacy, headers: { authorization: "Bearer \${file:upstream-token}" } }]\nauth: { anonymous: true }\nshutdown: { graceMs: 200 }\nlog: { format: json }\n`);
  const gw = await serveCli(['--config', file, '--port', '0']);
  cleanups.push(() => gw.stop());
  const lastCredential = (): string | undefined => up.requests.at(-1)?.headers.authorization;

  assert.equal((await post(gw.url, rpc(1, 'tools/list'))).status, 200);
  assert.equal(lastCredential(), 'Bearer first-upstream-credential');

  replaceLikeSecretVolume(secret, 'second-upstream-credential\n');
  assert.ok(
    await until(async () => {
      assert.equal((await post(gw.url, rpc(2, 'tools/list'))).status, 200);
      return lastCredential() === 'Bearer second-upstream-credential';
    }),
    gw.stderr(),
  );
  assert.ok(await until(() => /"msg":"config reloaded"/.test(gw.stderr())), gw.stderr());
  const announced = gw.stderr().split('\n').find((l) => l.includes('a file the config reads changed'));
  assert.ok(announced !== undefined, gw.stderr());
  assert.deepEqual(JSON.parse(announced).files, [secret]);
  // Neither value is ever written to the log.
  assert.doesNotMatch(gw.stderr(), /first-upstream-credential|second-upstream-credential/);
  assert.equal(await gw.stop(), 0);
});

test('a rotated admin token applies from the next request; the old one is refused; listener changes ask for a restart', async () => {
  const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
  cleanups.push(() => up.close());
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-rotate-admin-'));
  const file = join(dir, 'gatehouse.yaml');
  const token = join(dir, 'admin-token');
  const OLD = 'admin-token-before-rotation';
  const NEW = 'admin-token-after-rotation';
  replaceLikeSecretVolume(token, `${OLD}\n`);
  const config = (extra = '') => `upstreams: [{ name: up, url: "${up.url}", era: legacy }]\nauth: { anonymous: true }\nadmin: { enabled: true, port: 0, token: "\${file:admin-token}" }\nmetrics: { enabled: true, port: 0 }\nshutdown: { graceMs: 200 }\nlog: { format: json }\n${extra}`;
  writeFileSync(file, config());
  const gw = await serveCli(['--config', file, '--port', '0']);
  cleanups.push(() => gw.stop());
  const adminUrl = /"msg":"admin API listening","url":"([^"]+)"/.exec(gw.stderr())?.[1];
  assert.ok(adminUrl !== undefined, gw.stderr());
  const approvals = async (bearer: string): Promise<number> => {
    const res = await request(`${adminUrl}/approvals`, { headers: { authorization: `Bearer ${bearer}` } });
    await res.body.dump();
    return res.statusCode;
  };
  assert.equal(await approvals(OLD), 200);
  assert.equal(await approvals(NEW), 401);

  replaceLikeSecretVolume(token, `${NEW}\n`);
  assert.ok(await until(async () => (await approvals(NEW)) === 200), gw.stderr());
  assert.equal(await approvals(OLD), 401, 'the rotated-away token is refused');
  assert.doesNotMatch(gw.stderr(), new RegExp(`${OLD}|${NEW}`));
  // Only the admin API's credentials changed: the upstreams, catalog and auth are kept, not rebuilt. (The
  // log's lines reach stderr in batches, a few milliseconds after the token they tell of is in use.)
  assert.ok(await until(() => gw.stderr().includes('"msg":"config reloaded"')), gw.stderr());
  const reloaded = gw.stderr().split('\n').filter((l) => l.includes('"msg":"config reloaded"'));
  assert.equal(reloaded.length, 1, gw.stderr());
  assert.match(reloaded[0]!, /"kept":"upstreams, catalog, auth"/);

  // The admin and metrics listeners stay where they started, and the log says a restart is needed.
  writeFileSync(file, config().replace('port: 0, token', 'port: 1, token').replace('metrics: { enabled: true, port: 0 }', 'metrics: { enabled: true, port: 1 }'));
  assert.ok(await until(() => /admin\.enabled, admin\.host and admin\.port take effect only after a restart/.test(gw.stderr())), gw.stderr());
  assert.ok(await until(() => /metrics changes take effect only after a restart/.test(gw.stderr())), gw.stderr());
  assert.equal(await approvals(NEW), 200, 'the admin API still answers where it started');
  assert.equal(await gw.stop(), 0);
});
