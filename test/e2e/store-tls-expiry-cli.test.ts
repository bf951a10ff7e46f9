// check-config and doctor warn of the Redis store's certificates that have ended or soon will: a client
// certificate (store.tls.cert) or a CA (store.tls.ca) past its end (since when), or within 14 days of it
// (when). Before, an expired pair passed both (store-tls.ts checks only that the key is the certificate's),
// and the first sign was a store that refused every connection; until 5 December a CA ending soon was not
// told at all. Warnings: the exit code stays 0, as a restart on the day must not fail. Certificates made
// with openssl in a temp dir; no PEM text, and nothing of the key, is printed.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';
import { doctorConfigWarnings, logsAtStart, redisTlsConfig, tlsDir } from '../helpers/store-tls-cli.js';

const { dir, openssl, remove } = tlsDir('gatehouse-tls-expiry-');

/** A CA valid for `days` (openssl takes -1 at the least: ended a day ago). */
function ca(name: string, days: number): void {
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '30', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.pem`]);
  if (days === 30) return;
  // Signed again by its own key with the validity wanted (req -x509 takes no negative -days).
  openssl(['x509', '-x509toreq', '-in', `${name}.pem`, '-signkey', `${name}.key`, '-out', `${name}.csr`]);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-signkey', `${name}.key`, '-days', String(days), '-out', `${name}.pem`]);
}

/** A client certificate signed by `issuer`, valid for `days`. */
function client(name: string, issuer: string, days: number): void {
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`]);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${issuer}.pem`, '-CAkey', `${issuer}.key`, '-CAcreateserial', '-days', String(days), '-out', `${name}.pem`]);
}

function configWith(name: string, caName: string, certName: string, extra = ''): string {
  return redisTlsConfig(dir, name, { ca: `${caName}.pem`, cert: `${certName}.pem`, key: `${certName}.key` }, extra);
}

before(() => {
  ca('good-ca', 30);
  ca('old-ca', -1);
  ca('ending-ca', 5);
  client('expired-client', 'good-ca', -1);
  client('ending-client', 'good-ca', 5);
  client('fresh-client', 'good-ca', 30);
  client('ending-ca-client', 'ending-ca', 30);
});
after(remove);

/** Nothing of a PEM or of the key in what the command printed. */
function assertNoSecrets(text: string, keyName: string): void {
  assert.doesNotMatch(text, /BEGIN|END (CERTIFICATE|PRIVATE KEY)/);
  const keyBody = readFileSync(join(dir, `${keyName}.key`), 'utf8').split('\n')[1]!;
  assert.ok(!text.includes(keyBody.slice(0, 40)), 'a line of the key was printed');
}

describe('check-config', () => {
  test('an expired client certificate: a located warning saying since when; exit 0', async () => {
    const file = configWith('expired', 'good-ca', 'expired-client');
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /: ok\n$/);
    assert.match(r.stderr, new RegExp(`^warning: ${file.replace(/[.]/g, '\\.')}:6:\\d+ store\\.tls\\.cert: the client certificate \\(CN=expired-client\\) expired at \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ: a Redis that asks for a client certificate refuses it`, 'm'));
    assertNoSecrets(r.stdout + r.stderr, 'expired-client');
  });

  test('one ending within 14 days: when, and in how many days; an expired CA: since when', async () => {
    const ending = await runCli(['check-config', configWith('ending', 'good-ca', 'ending-client')]);
    assert.equal(ending.code, 0, ending.stderr);
    assert.match(ending.stderr, /store\.tls\.cert: the client certificate \(CN=ending-client\) expires at \S+Z, in 4 days: renew it before then/);
    const oldCa = await runCli(['check-config', configWith('old-ca', 'old-ca', 'fresh-client')]);
    assert.equal(oldCa.code, 0, oldCa.stderr);
    assert.match(oldCa.stderr, /store\.tls\.ca: the CA certificate \(CN=old-ca\) expired at \S+Z: a Redis server certificate it signed no longer verifies; /);
    assert.doesNotMatch(oldCa.stderr, /store\.tls\.cert/);
    assertNoSecrets(ending.stderr + oldCa.stderr, 'ending-client');
  });

  test('a CA ending within 14 days: when, and in how many days, as of a client certificate', async () => {
    const file = configWith('ending-ca', 'ending-ca', 'ending-ca-client');
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /: ok\n$/);
    assert.match(r.stderr, new RegExp(`^warning: ${file.replace(/[.]/g, '\\.')}:6:\\d+ store\\.tls\\.ca: the CA certificate \\(CN=ending-ca\\) expires at \\S+Z, in 4 days: a Redis server certificate it signed stops verifying then; `, 'm'));
    assertNoSecrets(r.stderr, 'ending-ca-client');
  });

  test('certificates with a month left: no warning', async () => {
    const r = await runCli(['check-config', configWith('fresh', 'good-ca', 'fresh-client')]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
  });
});

describe('doctor', () => {
  test('the same warnings as config rows, with a hint; exit 0', async () => {
    const { warned, checks, printed } = await doctorConfigWarnings(configWith('doctor', 'old-ca', 'expired-client'));
    assert.equal(warned.length, 2, JSON.stringify(checks));
    assert.match(warned[0]!.detail, /store\.tls\.cert: the client certificate \(CN=expired-client\) expired at /);
    assert.match(warned[1]!.detail, /store\.tls\.ca: the CA certificate \(CN=old-ca\) expired at /);
    for (const w of warned) assert.match(w.hint ?? '', /renew the certificate/);
    assertNoSecrets(printed, 'expired-client');
  });

  test('a CA ending within 14 days: a config row with the hint', async () => {
    const { warned, checks } = await doctorConfigWarnings(configWith('doctor-ending-ca', 'ending-ca', 'ending-ca-client'));
    assert.equal(warned.length, 1, JSON.stringify(checks));
    assert.match(warned[0]!.detail, /store\.tls\.ca: the CA certificate \(CN=ending-ca\) expires at \S+Z, in 4 days: /);
    assert.match(warned[0]!.hint ?? '', /renew the certificate/);
  });
});

describe('serve', () => {
  const listen = 'listen: { host: 127.0.0.1, port: 0 }\n';
  const storeCertificateWarnings = (logs: Array<Record<string, unknown>>) => logs.filter((l) => l.msg === 'a Redis store certificate has expired or expires soon');

  test('logs the same warning once at start, as it does of an expired API key', async () => {
    const logs = await logsAtStart(configWith('serve-expired', 'good-ca', 'expired-client', listen));
    const warned = storeCertificateWarnings(logs);
    assert.equal(warned.length, 1, JSON.stringify(warned));
    assert.match(String(warned[0]!.detail), /^store\.tls\.cert: the client certificate \(.*expired-client.*\) expired at /);
    assertNoSecrets(JSON.stringify(logs), 'expired-client');
  });

  test('logs a CA ending within 14 days once at start', async () => {
    const warned = storeCertificateWarnings(await logsAtStart(configWith('serve-ending-ca', 'ending-ca', 'ending-ca-client', listen)));
    assert.equal(warned.length, 1, JSON.stringify(warned));
    assert.match(String(warned[0]!.detail), /^store\.tls\.ca: the CA certificate \(.*ending-ca.*\) expires at \S+Z, in 4 days: /);
  });
});
