// The checks of store.tls the schema cannot make: the client certificate and its key come together, each
// PEM is one Node can use, and the key is the certificate's. Without them a wrong file (the CA bundle given
// as the certificate, a key from another pair) passed check-config and then failed every connection, so the
// store was down and every governed call refused, with OpenSSL's words in the log. Messages name keys,
// never what a file held: store.tls.key is a secret.

import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import type { GatehouseConfig } from './types.js';

/** A value still reading `${...}`: a file absent here (check-config --env-optional); judged where it is. */
function absent(value: string): boolean {
  return value.includes('${');
}

export function storeTlsProblems(store: GatehouseConfig['store']): string[] {
  if (store.kind !== 'redis' || store.tls === undefined) return [];
  const { ca, cert, key } = store.tls;
  const problems: string[] = [];
  if ((cert === undefined) !== (key === undefined)) {
    problems.push(`store.tls: ${cert === undefined ? 'key is given without cert' : 'cert is given without key'}; a client certificate needs both (give each as \${file:PATH})`);
  }
  if (ca !== undefined && !absent(ca) && certificateOf(ca) === undefined) problems.push('store.tls.ca: not a PEM certificate (-----BEGIN CERTIFICATE-----)');
  const certificate = cert === undefined || absent(cert) ? undefined : certificateOf(cert);
  if (cert !== undefined && !absent(cert) && certificate === undefined) problems.push('store.tls.cert: not a PEM certificate (-----BEGIN CERTIFICATE-----)');
  const privateKey = key === undefined || absent(key) ? undefined : privateKeyOf(key);
  if (key !== undefined && !absent(key) && privateKey === undefined) problems.push('store.tls.key: not an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----, or RSA/EC PRIVATE KEY)');
  if (certificate !== undefined && privateKey !== undefined && !certificate.checkPrivateKey(privateKey)) {
    problems.push("store.tls.key: not the private key of store.tls.cert's certificate (the two files are of different pairs)");
  }
  return problems;
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

/** The private key, or undefined when it is not one Node can read without a passphrase. */
function privateKeyOf(pem: string): KeyObject | undefined {
  try {
    return createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    return undefined;
  }
}
