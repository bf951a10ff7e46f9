// store.tls.passphrase given beside a key that is not encrypted: Node ignores the passphrase, so the config
// was accepted without a word, and an operator believed the key on disk protected by it. check-config and
// doctor now warn of it, located, and serve logs it once; a warning, not a refusal (the store connects), so
// the exit code stays 0. With an encrypted key the same passphrase draws no warning. Keys made by openssl;
// neither the passphrase nor the key is printed.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';
import { doctorConfigWarnings, logsAtStart, redisTlsConfig, tlsDir } from '../helpers/store-tls-cli.js';

const PASSPHRASE = 'a passphrase nothing uses 42';
const { dir, openssl, remove } = tlsDir('gatehouse-tls-passphrase-');

/** A CA, and a client certificate it signed whose key is `plain.key` (unencrypted) or `locked.key` (AES-256). */
before(() => {
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '30', '-subj', '/CN=passphrase CA', '-keyout', 'ca.key', '-out', 'ca.pem']);
  openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'plain.key']);
  openssl(['pkey', '-in', 'plain.key', '-aes256', '-passout', `pass:${PASSPHRASE}`, '-out', 'locked.key']);
  openssl(['req', '-new', '-key', 'plain.key', '-subj', '/CN=gatehouse', '-out', 'client.csr']);
  openssl(['x509', '-req', '-in', 'client.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '30', '-out', 'client.pem']);
  writeFileSync(join(dir, 'passphrase.txt'), `${PASSPHRASE}\n`);
});
after(remove);

function configWith(name: string, keyFile: string, extra = ''): string {
  return redisTlsConfig(dir, name, { ca: 'ca.pem', cert: 'client.pem', key: keyFile, passphrase: 'passphrase.txt' }, extra);
}
function assertNoSecrets(text: string): void {
  assert.ok(!text.includes(PASSPHRASE), 'the passphrase was printed');
  assert.doesNotMatch(text, /BEGIN|PRIVATE KEY-----/);
}

describe('check-config', () => {
  test('a passphrase for an unencrypted key: a located warning naming store.tls.passphrase; exit 0', async () => {
    const file = configWith('plain', 'plain.key');
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /: ok\n$/);
    assert.match(r.stderr, new RegExp(`^warning: ${file.replace(/[.]/g, '\\.')}:6:\\d+ store\\.tls\\.passphrase: given, but store\\.tls\\.key is not encrypted, so nothing uses it`, 'm'));
    assertNoSecrets(r.stdout + r.stderr);
  });

  test('the same passphrase for the encrypted key: no warning', async () => {
    const r = await runCli(['check-config', configWith('locked', 'locked.key')]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
  });
});

describe('doctor', () => {
  test('a config row with its hint; exit 0', async () => {
    const file = configWith('doctor', 'plain.key');
    const { warned, checks, printed } = await doctorConfigWarnings(file);
    assert.equal(warned.length, 1, JSON.stringify(checks));
    assert.match(warned[0]!.detail, /store\.tls\.passphrase: given, but store\.tls\.key is not encrypted/);
    assert.match(warned[0]!.hint ?? '', /encrypt the key.*or remove store\.tls\.passphrase/);
    assertNoSecrets(printed);
  });
});

describe('serve', () => {
  test('logs the warning once at start', async () => {
    const logs = await logsAtStart(configWith('serve', 'plain.key', 'listen: { host: 127.0.0.1, port: 0 }\n'));
    const warned = logs.filter((l) => l.msg === 'store.tls.passphrase is given for a key that is not encrypted');
    assert.equal(warned.length, 1, JSON.stringify(warned));
    assert.match(String(warned[0]!.detail), /^store\.tls\.passphrase: given, but store\.tls\.key is not encrypted/);
    assertNoSecrets(JSON.stringify(logs));
  });
});
