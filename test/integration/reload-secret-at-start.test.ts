// A secret file (`${file:PATH}`, a mounted Kubernetes Secret) rotated while the gateway starts: between the
// load of the config, which read the old value, and the watcher's first look. DESIGN.md §3: the file is
// watched and a new version replaces the running one; README §Reload: the files the config reads are
// watched with it. The watcher's first look must measure those files against what the load read, as it
// already does for the config's own text; until 4 December it took their new content as its baseline, so
// the running config kept the old secret until the file changed once more.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfigFileWithText } from '../../src/config/load.js';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGatewayFromConfigFile } from '../helpers/gateway.js';
import { post, rpc } from '../helpers/http.js';
import { replaceLikeSecretVolume } from '../helpers/secret-volume.js';
import { waitUntil } from '../helpers/stdio-children.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('a secret file replaced after the config was loaded and before the watcher\'s first look is applied at that look', async () => {
  const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
  cleanups.push(() => up.close());
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-secret-at-start-'));
  const file = join(dir, 'gatehouse.yaml');
  const secret = join(dir, 'upstream-token');
  replaceLikeSecretVolume(secret, 'credential-read-at-load\n');
  writeFileSync(
    file,
    `upstreams: [{ name: up, url: "${up.url}", era: legacy, headers: { authorization: "Bearer \${file:upstream-token}" } }]\n` +
      `listen: { port: 0 }\nauth: { anonymous: true }\nidempotency: { requireKeys: false }\nstore: { kind: sqlite, path: ${JSON.stringify(join(dir, 'g.db'))} }\nshutdown: { graceMs: 100 }\n`,
  );
  // As `serve` does: the config is loaded, then the gateway is built and listens, then the watcher starts.
  const loaded = await loadConfigFileWithText(file);
  replaceLikeSecretVolume(secret, 'credential-rotated-while-starting\n');
  const { gateway, url, logs } = await startGatewayFromConfigFile(file, loaded);
  cleanups.push(() => gateway.close());
  const lastCredential = (): string | undefined => up.requests.at(-1)?.headers.authorization;

  assert.equal((await post(url, rpc(1, 'tools/list'))).status, 200);
  assert.equal(lastCredential(), 'Bearer credential-read-at-load', 'the running config is the one loaded');

  // The first look (here at once, as SIGHUP asks) finds the file changed since the load.
  await gateway.checkConfigFile();
  assert.ok(await waitUntil(() => gateway.reloads.applied === 1, 3000), `no reload applied: ${JSON.stringify(logs)}`);
  assert.equal((await post(url, rpc(2, 'tools/list'))).status, 200);
  assert.equal(lastCredential(), 'Bearer credential-rotated-while-starting');
  assert.equal(await gateway.checkConfigFile(), 'unchanged', 'one change is applied once');
  assert.ok(logs.some((l) => l.msg === 'config reload: a file the config reads changed'), JSON.stringify(logs));
});

test('the files the load read, unchanged at the first look, are no change', async () => {
  const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
  cleanups.push(() => up.close());
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-secret-at-start-'));
  const file = join(dir, 'gatehouse.yaml');
  // Bytes that a decode to text would not give back as they are: the load and the watcher digest the bytes.
  writeFileSync(join(dir, 'state-key'), Buffer.concat([Buffer.from('k'.repeat(40)), Buffer.from([0xff, 0x0a])]));
  writeFileSync(
    file,
    `listen: { port: 0 }\nupstreams: [{ name: up, url: "${up.url}", era: legacy }]\nsessions: { requestStateKey: "\${file:state-key}" }\n` +
      `auth: { anonymous: true }\nidempotency: { requireKeys: false }\nstore: { kind: sqlite, path: ${JSON.stringify(join(dir, 'g.db'))} }\n`,
  );
  const { gateway } = await startGatewayFromConfigFile(file);
  cleanups.push(() => gateway.close());
  assert.equal(await gateway.checkConfigFile(), 'unchanged');
  assert.equal(gateway.reloads.applied + gateway.reloads.refused, 0);
});
