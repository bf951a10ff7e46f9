// The checks of store.tls the schema cannot make: the client certificate and its key come together, each
// PEM is one Node can use, an encrypted key has the passphrase that decrypts it, and the key is the
// certificate's. Without them a wrong file (the CA bundle given as the certificate, a key from another pair)
// passed check-config and then failed every connection, so the store was down and every governed call
// refused, with OpenSSL's words in the log. Messages name keys, never what a file held: store.tls.key and
// store.tls.passphrase are secrets.

import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import type { GatehouseConfig } from './types.js';

/** A value still reading `${...}`: a file absent here (check-config --env-optional); judged where it is. */
function absent(value: string): boolean {
  return value.includes('${');
}

export function storeTlsProblems(store: GatehouseConfig['store']): string[] {
  if (store.kind !== 'redis' || store.tls === undefined) return [];
  const { ca, cert, key, passphrase } = store.tls;
  const problems: string[] = [];
  if ((cert === undefined) !== (key === undefined)) {
    problems.push(`store.tls: ${cert === undefined ? 'key is given without cert' : 'cert is given without key'}; a client certificate needs both (give each as \${file:PATH})`);
  }
  if (passphrase !== undefined && key === undefined) problems.push('store.tls: passphrase is given without key; it decrypts the client certificate\'s key, give that as store.tls.key');
  if (ca !== undefined && !absent(ca) && certificateOf(ca) === undefined) problems.push('store.tls.ca: not a PEM certificate (-----BEGIN CERTIFICATE-----)');
  const certificate = cert === undefined || absent(cert) ? undefined : certificateOf(cert);
  if (cert !== undefined && !absent(cert) && certificate === undefined) problems.push('store.tls.cert: not a PEM certificate (-----BEGIN CERTIFICATE-----)');
  const privateKey = key === undefined || absent(key) ? undefined : readPrivateKey(key, passphrase, problems);
  if (certificate !== undefined && privateKey !== undefined && !certificate.checkPrivateKey(privateKey)) {
    problems.push("store.tls.key: not the private key of store.tls.cert's certificate (the two files are of different pairs)");
  }
  return problems;
}

/**
 * What store.tls may hold by mistake and still work, as warnings (`key.path: message`, for locateProblems):
 * a passphrase beside a key that is not encrypted. Node ignores it, so it was accepted without a word, and
 * the operator believed the key on disk was protected by it. A warning, not a refusal: the store connects.
 */
export function storeTlsWarnings(store: GatehouseConfig['store']): string[] {
  if (store.kind !== 'redis' || store.tls === undefined) return [];
  const { key, passphrase } = store.tls;
  if (passphrase === undefined || key === undefined || absent(key) || ENCRYPTED_KEY.test(key)) return [];
  return ['store.tls.passphrase: given, but store.tls.key is not encrypted, so nothing uses it: the key file is readable without it; encrypt the key (openssl pkey -aes256) or leave store.tls.passphrase out'];
}

/** The first certificate of a PEM bundle, or undefined when it holds none Node can read. */
function certificateOf(pem: string): X509Certificate | undefined {
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) return undefined;
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}

/** An encrypted PEM key: PKCS#8's own header, or a traditional (RSA/EC) key's Proc-Type header. */
const ENCRYPTED_KEY = /-----BEGIN ENCRYPTED PRIVATE KEY-----|^Proc-Type:\s*4,ENCRYPTED/m;

/**
 * The private key (decrypted with `passphrase` when it is encrypted), or undefined with the reason pushed to
 * `problems`; undefined alone when the passphrase is absent here (`${...}`), to be judged where it is. An
 * encrypted key is told apart by its header, not by OpenSSL's error: that differs between its versions.
 */
function readPrivateKey(pem: string, passphrase: string | undefined, problems: string[]): KeyObject | undefined {
  const encrypted = ENCRYPTED_KEY.test(pem);
  if (encrypted && passphrase === undefined) {
    problems.push('store.tls.key: encrypted, and no store.tls.passphrase is given to decrypt it (give it as ${env:NAME} or ${file:PATH})');
    return undefined;
  }
  if (encrypted && passphrase !== undefined && absent(passphrase)) return undefined;
  try {
    return createPrivateKey({ key: pem, format: 'pem', ...(encrypted ? { passphrase } : {}) });
  } catch {
    problems.push(encrypted
      ? 'store.tls.passphrase: does not decrypt store.tls.key (a wrong passphrase, or the key of another one)'
      : 'store.tls.key: not a PEM private key (-----BEGIN PRIVATE KEY-----, RSA/EC PRIVATE KEY, or ENCRYPTED PRIVATE KEY with store.tls.passphrase)');
    return undefined;
  }
}
