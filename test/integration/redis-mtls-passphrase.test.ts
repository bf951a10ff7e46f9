// A client certificate whose key is encrypted (openssl genpkey -aes256), against a real redis-server with
// tls-auth-clients yes. Until 5 December such a key was refused at load ("not an unencrypted PEM private
// key") and there was no way to give its passphrase: the key had to be stored decrypted. store.tls.passphrase,
// read through ${env:...} or ${file:...}, now decrypts it on every connection; a missing or wrong one is a
// config error naming the key, and the passphrase is one of the config's secrets, kept out of every log line.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { unsupportedFeatures } from '../../src/config/semantic-checks.js';
import { collectSecrets } from '../../src/config/secrets.js';
import { createLogger } from '../../src/log/logger.js';
import { openStore } from '../../src/store/open-store.js';
import { mtlsCertificates, startRedis, type TestRedis } from '../helpers/redis.js';

const PASSPHRASE = 'correct horse battery staple 7';

let certs: ReturnType<typeof mtlsCertificates>;
let redis: TestRedis;
let encryptedKey: string;

before(async () => {
  certs = mtlsCertificates();
  const openssl = (args: string[]): void => void execFileSync('openssl', args, { cwd: certs.dir, stdio: ['ignore', 'ignore', 'pipe'] });
  openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-aes256', '-pass', `pass:${PASSPHRASE}`, '-out', 'locked.key']);
  openssl(['req', '-new', '-key', 'locked.key', '-passin', `pass:${PASSPHRASE}`, '-subj', '/CN=gatehouse-locked', '-out', 'locked.csr']);
  writeFileSync(join(certs.dir, 'locked.ext'), 'extendedKeyUsage=clientAuth\n');
  openssl(['x509', '-req', '-in', 'locked.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'locked.ext', '-out', 'locked.crt']);
  writeFileSync(join(certs.dir, 'passphrase.txt'), `${PASSPHRASE}\n`);
  encryptedKey = readFileSync(join(certs.dir, 'locked.key'), 'utf8');
  assert.match(encryptedKey, /-----BEGIN ENCRYPTED PRIVATE KEY-----/);
  redis = await startRedis({ tls: certs.server, config: ['tls-auth-clients yes', `tls-ca-cert-file ${join(certs.dir, 'ca.crt')}`] });
});
after(async () => {
  await redis.stop();
});

const LOCKED = ['ca: ${file:ca.crt}', 'cert: ${file:locked.crt}', 'key: ${file:locked.key}'];

function configText(tls: string[]): string {
  return [
    'upstreams: [{ name: up, url: "http://127.0.0.1:9/mcp" }]',
    'auth: { anonymous: true }',
    'store:',
    '  kind: redis',
    `  url: "${redis.url}"`,
    '  keyPrefix: "mtls-passphrase:"',
    '  commandTimeoutMs: 1000',
    '  tls:',
    ...tls.map((l) => `    ${l}`),
    '',
  ].join('\n');
}

function load(text: string, env: Record<string, string> = {}) {
  return parseConfigText(text, { fileName: 'gatehouse.yaml', baseDir: certs.dir, env });
}

/** The config's problems as `check-config` reports them: schema and interpolation (thrown), then the semantic checks. */
function problemsOf(text: string, env: Record<string, string> = {}): string[] {
  try {
    return unsupportedFeatures(load(text, env));
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => `${i.path}: ${i.message}`);
    throw err;
  }
}

describe('an encrypted client key', () => {
  test('with its passphrase from ${env:...} or ${file:...}, the store connects and works over mTLS', async () => {
    for (const [passphrase, env] of [
      ['passphrase: ${env:REDIS_KEY_PASSPHRASE}', { REDIS_KEY_PASSPHRASE: PASSPHRASE }],
      ['passphrase: ${file:passphrase.txt}', {}],
    ] as const) {
      const config = load(configText([...LOCKED, passphrase]), env);
      assert.deepEqual(unsupportedFeatures(config), [], passphrase);
      const store = openStore(config.store);
      try {
        await store.ping();
        assert.equal((await store.addToWindow(`w-${passphrase.length}`, 3, 60_000)).total, 3, passphrase);
      } finally {
        await store.close();
      }
    }
  });

  test('without a passphrase, or with a wrong one, or a passphrase without a key: a config error naming the key, no secret quoted', () => {
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [LOCKED, {}, /^store\.tls\.key: encrypted, and no store\.tls\.passphrase is given/],
      [[...LOCKED, 'passphrase: ${env:WRONG}'], { WRONG: 'not the passphrase' }, /^store\.tls\.passphrase: does not decrypt store\.tls\.key/],
      [['ca: ${file:ca.crt}', 'passphrase: ${env:P}'], { P: PASSPHRASE }, /^store\.tls: passphrase is given without key/],
    ];
    for (const [tls, env, expected] of cases) {
      const problems = problemsOf(configText(tls), env);
      assert.equal(problems.length, 1, `${tls.join(', ')}: ${problems.join('\n')}`);
      assert.match(problems[0]!, expected);
      assert.ok(!problems[0]!.includes(PASSPHRASE) && !problems[0]!.includes('not the passphrase'), problems[0]);
      assert.ok(!problems[0]!.includes(encryptedKey.split('\n')[1]!), problems[0]);
    }
  });

  test("the passphrase is one of the config's secrets: the log scrubs it", () => {
    const config = load(configText([...LOCKED, 'passphrase: ${env:REDIS_KEY_PASSPHRASE}']), { REDIS_KEY_PASSPHRASE: PASSPHRASE });
    const lines: string[] = [];
    const log = createLogger('info', (line) => void lines.push(line), {}, { secrets: collectSecrets(config) });
    log.error('a library quoted it', { detail: `bad decrypt with ${PASSPHRASE}` });
    assert.equal(lines.length, 1);
    assert.ok(!lines[0]!.includes(PASSPHRASE), lines[0]);
  });
});
