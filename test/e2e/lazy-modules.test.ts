// Issue 17 item 3: what the configured features do not use is not loaded. A gateway on API keys, the
// SQLite store, JSON logs and no metrics never loads the OAuth stack (jose), the Redis client (ioredis),
// prom-client or pino-pretty; turning metrics on loads prom-client (which shows the detector works).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { hashKey } from '../../src/auth/key-hash.js';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { ROOT, serveCli } from '../helpers/cli.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-lazy-'));
const KEY = 'gh_lazy_0123456789abcdefghijklmnopqrstuv';
let up: FakeUpstream | undefined;
after(async () => up?.close());

const OPTIONAL = { jose: /\/node_modules\/jose\//, ioredis: /\/node_modules\/ioredis\//, 'prom-client': /\/node_modules\/prom-client\//, 'pino-pretty': /\/node_modules\/pino-pretty\//, opentelemetry: /\/node_modules\/@opentelemetry\// };

async function modulesLoadedBy(name: string, config: string): Promise<string> {
  up ??= await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, config.replaceAll('UPSTREAM', up.url));
  const log = join(dir, `${name}.modules`);
  writeFileSync(log, '');
  const preload = pathToFileURL(join(ROOT, 'test/fixtures/module-log/register.mjs')).href;
  const gw = await serveCli(['--config', file], { env: { ...process.env, MODULE_LOG: log, NODE_OPTIONS: `--import ${preload}` }, configStore: true });
  try {
    const res = await post(gw.url, rpc(1, 'tools/list'), { ...LEGACY_HEADERS, authorization: `Bearer ${KEY}` });
    assert.equal(res.status, 200, res.text);
  } finally {
    assert.equal(await gw.stop(), 0, gw.stderr());
  }
  return readFileSync(log, 'utf8');
}

test('API keys, SQLite, JSON logs, no metrics, no tracing: jose, ioredis, prom-client, pino-pretty and OpenTelemetry are never loaded', async () => {
  const loaded = await modulesLoadedBy(
    'lean',
    `listen: { host: 127.0.0.1, port: 0 }\nupstreams: [{ name: a, url: "UPSTREAM" }]\nauth: { apiKeys: [{ id: k, hash: "${hashKey(KEY)}" }] }\nstore: { kind: sqlite, path: "${join(dir, 'lean.db')}" }\nlog: { format: json }\n`,
  );
  assert.match(loaded, /\/node_modules\/undici\//, 'the detector records what is loaded');
  for (const [name, pattern] of Object.entries(OPTIONAL)) assert.doesNotMatch(loaded, pattern, `${name} was loaded`);
});

test('metrics on loads prom-client', async () => {
  const loaded = await modulesLoadedBy(
    'metrics',
    `listen: { host: 127.0.0.1, port: 0 }\nupstreams: [{ name: a, url: "UPSTREAM" }]\nauth: { apiKeys: [{ id: k, hash: "${hashKey(KEY)}" }] }\nstore: { kind: sqlite, path: "${join(dir, 'metrics.db')}" }\nmetrics: { enabled: true, port: 0 }\nlog: { format: json }\n`,
  );
  assert.match(loaded, OPTIONAL['prom-client']);
  assert.doesNotMatch(loaded, OPTIONAL.jose);
});
