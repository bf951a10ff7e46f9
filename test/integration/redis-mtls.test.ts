// Redis over mutual TLS: a real redis-server with tls-auth-clients yes (Redis' default with TLS, and what
// managed services with mTLS run), certificates made by openssl. Gatehouse had no way to present a client
// certificate (store.tls held only `ca`), so such a Redis could not be used at all. store.tls.cert and
// store.tls.key, read through ${file:...}, now are presented on every connection; without them, or with a
// certificate the server's CA did not sign, the store is down and governed calls are refused (never let
// through). A key file that cannot be read, or one that is not the certificate's, is a config error at load
// that names the key and never quotes the file.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { unsupportedFeatures } from '../../src/config/semantic-checks.js';
import { collectSecrets } from '../../src/config/secrets.js';
import { createLogger } from '../../src/log/logger.js';
import { openStore } from '../../src/store/open-store.js';
import type { AuditEntry } from '../../src/store/store.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGatewayFromConfigFile } from '../helpers/gateway.js';
import { mtlsCertificates, startRedis, type TestRedis } from '../helpers/redis.js';
import { readyz, recordCall, untilServed } from '../helpers/store-outage.js';

let certs: ReturnType<typeof mtlsCertificates>;
let redis: TestRedis;
let up: CountingUpstream;

before(async () => {
  certs = mtlsCertificates();
  redis = await startRedis({ tls: certs.server, config: ['tls-auth-clients yes', `tls-ca-cert-file ${join(certs.dir, 'ca.crt')}`] });
  up = await startCountingUpstream('modern');
});
after(async () => {
  await up.close();
  await redis.stop();
});

/** The store section of a config file in the certificates' directory; `tls` lines go under store.tls. */
function configText(tls: string[], url = redis.url): string {
  return [
    `upstreams: [{ name: up, url: "${up.url}" }]`,
    'auth: { anonymous: true }',
    'listen: { host: 127.0.0.1, port: 0 }',
    'idempotency: { requireKeys: false }',
    'store:',
    '  kind: redis',
    `  url: "${url}"`,
    '  keyPrefix: "mtls:"',
    '  commandTimeoutMs: 1000',
    ...(tls.length > 0 ? ['  tls:', ...tls.map((l) => `    ${l}`)] : []),
    '',
  ].join('\n');
}

const CLIENT = ['ca: ${file:ca.crt}', 'cert: ${file:client.crt}', 'key: ${file:client.key}'];

function load(text: string) {
  return parseConfigText(text, { fileName: 'gatehouse.yaml', baseDir: certs.dir, env: {} });
}

/** The config's problems as `check-config` reports them: schema and interpolation (thrown), then the semantic checks. */
function problemsOf(text: string): string[] {
  try {
    return unsupportedFeatures(load(text));
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => `${i.path}: ${i.message}`);
    throw err;
  }
}

/** No line of a private key's body, nor the whole of it, in `text`. */
function assertNoKeyIn(text: string, key: string): void {
  for (const line of key.split('\n').filter((l) => l !== '' && !l.startsWith('-----'))) assert.ok(!text.includes(line), `a line of the private key is in: ${text.slice(0, 300)}`);
}

describe('the store over mTLS', () => {
  test('with the client certificate and key read through ${file:...}, every kind of store operation works', async () => {
    const config = load(configText(CLIENT));
    assert.deepEqual(unsupportedFeatures(config), []);
    const store = openStore(config.store);
    try {
      await store.ping();
      assert.equal((await store.addToWindow('w', 2, 60_000)).total, 2);
      const entry: AuditEntry = { time: new Date().toISOString(), callId: 'c1', runId: 'r1', subject: 'key:ci', method: 'tools/call', tool: 'echo', toolRef: 'up/echo', outcome: 'ok', latencyMs: 1 };
      assert.equal((await store.appendAudit(entry)).seq, 1);
    } finally {
      await store.close();
    }
  });

  test('servername: the certificate is verified against it, not against the IP connected to', async () => {
    const named = openStore(load(configText([...CLIENT, 'servername: redis.test'])).store);
    const misnamed = openStore(load(configText([...CLIENT, 'servername: other.test'])).store);
    try {
      await named.ping();
      await assert.rejects(misnamed.ping(), (err: Error) => err.name === 'StoreUnavailableError' && /other\.test/.test(err.message));
    } finally {
      await Promise.all([named.close(), misnamed.close()]);
    }
  });

  test('without a client certificate, or with one another CA signed, the store is unavailable', async () => {
    const without = openStore(load(configText(['ca: ${file:ca.crt}'])).store);
    const stranger = openStore(load(configText(['ca: ${file:ca.crt}', 'cert: ${file:stranger.crt}', 'key: ${file:stranger.key}'])).store);
    try {
      // The server's TLS alert says why ("certificate required", "unknown ca"), unless the client's first
      // write meets the connection the server closed after sending it (ECONNRESET, EPIPE).
      await assert.rejects(without.ping(), (err: Error) => err.name === 'StoreUnavailableError' && /not connected to Redis: .*(certificate required|ECONNRESET|EPIPE)/.test(err.message));
      await assert.rejects(stranger.ping(), (err: Error) => err.name === 'StoreUnavailableError' && /not connected to Redis: .*(unknown ca|ECONNRESET|EPIPE)/.test(err.message));
    } finally {
      await Promise.all([without.close(), stranger.close()]);
    }
  });
});

describe('a Cluster over mTLS', () => {
  test('the client certificate goes to every node connection (tls-cluster yes, a one-node cluster)', { timeout: 60_000 }, async () => {
    const node = await startRedis({ tls: certs.server, config: ['tls-auth-clients yes', `tls-ca-cert-file ${join(certs.dir, 'ca.crt')}`, 'tls-cluster yes', 'cluster-enabled yes', 'cluster-announce-ip 127.0.0.1', `cluster-config-file ${join(certs.dir, `nodes-${Date.now()}.conf`)}`] });
    const tls = { ca: certs.ca, ...certs.client };
    const admin = new Redis({ host: '127.0.0.1', port: node.port, tls, enableReadyCheck: false, lazyConnect: true });
    const bare = openStore({ kind: 'redis', url: 'rediss://ignored:1', keyPrefix: 'mtls-cluster:', commandTimeoutMs: 1_000, cluster: { nodes: [`127.0.0.1:${node.port}`] }, tls: { ca: certs.ca } });
    const store = openStore({ kind: 'redis', url: 'rediss://ignored:1', keyPrefix: 'mtls-cluster:', commandTimeoutMs: 2_000, cluster: { nodes: [`127.0.0.1:${node.port}`] }, tls });
    try {
      await admin.connect();
      await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
      let state = '';
      for (let i = 0; i < 100 && !state.includes('cluster_state:ok'); i++) {
        state = String(await admin.call('CLUSTER', 'INFO'));
        if (!state.includes('cluster_state:ok')) await new Promise((r) => setTimeout(r, 100));
      }
      assert.match(state, /cluster_state:ok/);
      await store.ping();
      assert.equal((await store.addToWindow('w', 4, 60_000)).total, 4);
      await assert.rejects(bare.ping(), { name: 'StoreUnavailableError' }, 'without the client certificate, no node answers');
    } finally {
      await Promise.all([store.close(), bare.close()]);
      admin.disconnect();
      await node.stop();
    }
  });
});

describe('the gateway over mTLS', () => {
  test('serves governed calls with the client certificate; without it, refuses them 503 and none reaches the upstream', { timeout: 60_000 }, async () => {
    const good = join(certs.dir, 'good.yaml');
    const bare = join(certs.dir, 'bare.yaml');
    writeFileSync(good, configText(CLIENT));
    writeFileSync(bare, configText(['ca: ${file:ca.crt}']));
    const served = await startGatewayFromConfigFile(good);
    try {
      const answer = await untilServed(() => recordCall(served, 'over-mtls'), 30);
      assert.equal(answer.status, 200, answer.text);
      assert.equal((await readyz(served)).body.store?.up, true);
      assertNoKeyIn(JSON.stringify(served.logs), certs.client.key);
    } finally {
      await served.close();
    }
    const executed = up.executions.length;
    const refusing = await startGatewayFromConfigFile(bare);
    try {
      // From the first call on, before anything else (a readiness probe) has asked the store: a call with no
      // limit to count first ran upstream, and was answered 503 only once its audit record failed.
      for (let i = 0; i < 3; i++) {
        const refused = await recordCall(refusing, `no-client-cert-${i}`);
        assert.equal(refused.status, 503, refused.text);
        assert.equal(refused.json().error.data.code, 'GW_ERR_STATE_UNAVAILABLE', refused.text);
      }
      assert.equal(up.executions.length, executed, 'no call ran upstream while the store refused the connection');
      const down = refusing.logs.find((l) => l.msg === 'the store is unavailable: governed calls are refused until it is back');
      assert.match(String(down?.err), /not connected to Redis: \S/, JSON.stringify(down));
      const ready = await readyz(refusing);
      assert.equal(ready.status, 503, JSON.stringify(ready.body));
      assert.deepEqual(ready.body.store, { kind: 'redis', up: false });
    } finally {
      await refusing.close();
    }
  });
});

describe('store.tls at load', () => {
  test('a key file that cannot be read is a config error naming store.tls.key and the file, not what any file holds', () => {
    mkdirSync(join(certs.dir, 'a-directory.key'), { recursive: true });
    for (const file of ['missing.key', 'a-directory.key']) {
      const problems = problemsOf(configText(['ca: ${file:ca.crt}', 'cert: ${file:client.crt}', `key: \${file:${file}}`]));
      assert.equal(problems.length, 1, problems.join('\n'));
      assert.match(problems[0]!, new RegExp(`^store\\.tls\\.key: .*${file.replace('.', '\\.')}`));
      assertNoKeyIn(problems[0]!, certs.client.key);
    }
  });

  test('a key of another pair, a certificate given as the key, a CA bundle as the certificate, a cert without a key: each named, no file quoted', () => {
    const cases: Array<[string[], RegExp]> = [
      [['cert: ${file:client.crt}', 'key: ${file:stranger.key}'], /^store\.tls\.key: not the private key of store\.tls\.cert's certificate/],
      [['cert: ${file:client.crt}', 'key: ${file:client.crt}'], /^store\.tls\.key: not a PEM private key/],
      [['cert: ${file:client.key}', 'key: ${file:client.key}'], /^store\.tls\.cert: not a PEM certificate/],
      [['cert: ${file:client.crt}'], /^store\.tls: cert is given without key/],
      [['key: ${file:client.key}'], /^store\.tls: key is given without cert/],
    ];
    for (const [tls, expected] of cases) {
      const problems = problemsOf(configText(tls));
      assert.equal(problems.length, 1, `${tls.join(', ')}: ${problems.join('\n')}`);
      assert.match(problems[0]!, expected);
      assertNoKeyIn(problems[0]!, certs.client.key);
      assertNoKeyIn(problems[0]!, certs.stranger.key);
    }
  });

  test("the key is one of the config's secrets: the log scrubs it, whole or a line of it", () => {
    const config = load(configText(CLIENT));
    const lines: string[] = [];
    const log = createLogger('info', (line) => void lines.push(line), {}, { secrets: collectSecrets(config) });
    const keyLine = certs.client.key.split('\n')[3]!;
    log.error('a library quoted it', { whole: certs.client.key, part: `near ${keyLine} here` });
    assert.equal(lines.length, 1);
    assertNoKeyIn(lines[0]!, certs.client.key);
    assert.match(lines[0]!, /"whole":"\[redacted\]/i);
  });
});
