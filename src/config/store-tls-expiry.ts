// The Redis store's certificates that have expired, or soon will, said as warnings (check-config, doctor, serve):
// a client certificate past its notAfter is refused by a Redis that asks for one, and a CA past it no longer
// verifies the server, so the store is down and every governed call refused, with OpenSSL's words in the
// log. Warnings, not refusals: certificates end while a gateway runs, and a restart on that day must not
// fail for it (the store's own errors say it then). Only dates and subjects are told, never a PEM: the
// certificate sits beside its key, a secret.

import { X509Certificate } from 'node:crypto';
import type { GatehouseConfig } from './types.js';

/** How far ahead an end is told: two weeks leaves a renewal, and a rotation through a reload, time. */
export const EXPIRES_SOON_MS = 14 * 86_400_000;

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Each warning as `key.path: message`, for locateProblems. */
export function storeTlsExpiryWarnings(store: GatehouseConfig['store'], now = Date.now()): string[] {
  if (store.kind !== 'redis' || store.tls === undefined) return [];
  const { ca, cert } = store.tls;
  const out: string[] = [];
  certificatesOf(cert).forEach((c, i, all) => {
    const which = i === 0 ? 'the client certificate' : `intermediate certificate ${i} of ${all.length - 1} after it`;
    if (c.notAfter <= now) {
      out.push(`store.tls.cert: ${which} (${c.subject}) expired at ${isoOf(c.notAfter)}: a Redis that asks for a client certificate refuses it, and the store is down; renew it (a reload takes the new file)`);
    } else if (c.notAfter - now <= EXPIRES_SOON_MS) {
      out.push(`store.tls.cert: ${which} (${c.subject}) expires at ${isoOf(c.notAfter)}, in ${daysUntil(c.notAfter, now)}: renew it before then (a reload takes the new file)`);
    }
  });
  const cas = certificatesOf(ca);
  const expiredCas = cas.filter((c) => c.notAfter <= now);
  for (const c of expiredCas) {
    const others = cas.length > expiredCas.length ? ', unless another CA of the file signed it' : '';
    out.push(`store.tls.ca: the CA certificate (${c.subject}) expired at ${isoOf(c.notAfter)}: a Redis server certificate it signed no longer verifies${others}; give the CA that signs the server's certificate now`);
  }
  // A CA ending soon is told as a client certificate is: on that day the server's certificate stops verifying,
  // and every connection fails as surely as with a refused client certificate.
  for (const c of cas.filter((c) => c.notAfter > now && c.notAfter - now <= EXPIRES_SOON_MS)) {
    const others = cas.length > 1 ? ', unless another CA of the file signed it' : '';
    out.push(`store.tls.ca: the CA certificate (${c.subject}) expires at ${isoOf(c.notAfter)}, in ${daysUntil(c.notAfter, now)}: a Redis server certificate it signed stops verifying then${others}; give the CA that will sign the server's certificate before then (a reload takes the new file)`);
  }
  return out;
}

interface Validity {
  subject: string;
  notAfter: number;
}

/** Every certificate of a PEM value Node can read; a value absent here (`${...}`) or unreadable has none (store-tls.ts refuses those). */
function certificatesOf(pem: string | undefined): Validity[] {
  if (pem === undefined || pem.includes('${')) return [];
  const out: Validity[] = [];
  for (const [block] of pem.matchAll(PEM_CERTIFICATE)) {
    try {
      const c = new X509Certificate(block);
      const notAfter = Date.parse(c.validTo);
      if (!Number.isNaN(notAfter)) out.push({ subject: printableSubject(c.subject), notAfter });
    } catch {
      // Not one Node can read: the semantic checks name it.
    }
  }
  return out;
}

/** `CN=gatehouse, O=Example`: one line, printable, short; a subject is the file's text, and goes to a terminal. */
function printableSubject(subject: string): string {
  const line = subject.split('\n').filter((part) => part !== '').join(', ').replace(/[^\x20-\x7e]/g, '?');
  return line.length > 120 ? `${line.slice(0, 117)}...` : line || 'no subject';
}

function isoOf(ms: number): string {
  return new Date(ms).toISOString().replace(/\.000Z$/, 'Z');
}

function daysUntil(end: number, now: number): string {
  const days = Math.floor((end - now) / 86_400_000);
  if (days === 0) return 'less than a day';
  return `${days} day${days === 1 ? '' : 's'}`;
}
