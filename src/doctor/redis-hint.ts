// What to do about a Redis store that failed doctor's check, from the cause Redis or the connection gave
// (the store's error names it: redis-store.ts describe). One hint for every failure sent an operator whose
// Redis was full, a replica or loading, or whose certificate was not trusted, to look at store.url.

import { SILENT_SENTINEL } from './sentinel-probe.js';

const HINTS: Array<[RegExp, string]> = [
  [/WRONGPASS|invalid username-password/, 'the password (or user name) in store.url is not one Redis accepts: check it against the Redis user (ACL) or requirepass; percent-encode characters such as @ : / in it'],
  [/NOAUTH/, 'Redis requires a password: put it in store.url (redis://:PASSWORD@host:port, or redis://USER:PASSWORD@host:port)'],
  [/NOPERM/, 'the Redis user lacks a permission Gatehouse needs (the error names the command or key): allow it, on keys under store.keyPrefix, in the user\'s ACL'],
  [/\bOOM\b/, 'Redis is full (maxmemory reached with maxmemory-policy noeviction), so it refuses writes and the gateway refuses governed calls: give it more memory (maxmemory) or free some'],
  [/READONLY/, 'store.url leads to a read-only replica: point it at the primary (or use store.sentinel, which follows failovers)'],
  [/LOADING/, 'Redis is loading its dataset after a restart and refuses commands until it is done: run doctor again once it is loaded (the gateway refuses governed calls until then)'],
  [/MISCONF/, 'Redis could not save its snapshot and refuses writes (MISCONF): fix the disk or the dir setting of the Redis server'],
  // Redis' default with TLS (tls-auth-clients yes) asks every client for a certificate: none given, or one it refused.
  [/certificate required|alert (bad|unknown) certificate|unknown ca/i, "the Redis server asks for a client certificate (tls-auth-clients yes, its default with TLS): give store.tls.cert and store.tls.key a certificate signed by a CA in its tls-ca-cert-file, or set tls-auth-clients no (or optional) on the server and authenticate with the password in store.url"],
  [/certificate|CERT_|self[- ]signed/i, "the Redis server's certificate is not trusted for this address: set store.tls.ca to the CA that signed it, and use a host name the certificate holds in store.url"],
  [/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH/, 'is Redis up and reachable from here? check store.url (its host and port)'],
  [/ETIMEDOUT|ECONNRESET|EPIPE|socket disconnected|secure TLS connection/, 'the connection did not get through: check store.url (its host and port), and that its scheme matches the port (rediss:// for a TLS port, redis:// for a plain one); over TLS, the server may be asking for a client certificate (tls-auth-clients yes, its default) and refusing the one in store.tls.cert, or there is none: give one signed by a CA in its tls-ca-cert-file, or set tls-auth-clients no (or optional) on it'],
];

const DEFAULT = 'check store.url (host, port, password, database) and that this user may write keys under store.keyPrefix';

// Node's words when the certificate is trusted but holds another name than the one verified. The CA hint
// above sent the operator to store.tls.ca, which was right already; the name is what to change, and with an
// IP, a node address the sentinels or the Cluster give, or a proxy, only store.tls.servername can give it.
const NAME_MISMATCH = /does not match certificate's altnames|ERR_TLS_CERT_ALTNAME_INVALID/;
const NAME_HINT = "the Redis server's certificate is trusted but does not hold the name Gatehouse verified (the detail says which it holds): set store.tls.servername to a name the certificate holds, or connect to one in store.url";
const SENTINEL_NAME_HINT = "a certificate is trusted but does not hold the name Gatehouse verified (the detail says which it holds): store.tls.servername is verified against the primary, and against the sentinels unless store.sentinel.servername names theirs apart; set each to a name its certificate holds";

/** `sentinel`: the store finds its primary through Sentinel, whose certificates may hold names of their own. */
export function redisHint(message: string, sentinel = false): string {
  if (NAME_MISMATCH.test(message)) return sentinel ? SENTINEL_NAME_HINT : NAME_HINT;
  return HINTS.find(([cause]) => cause.test(message))?.[1] ?? DEFAULT;
}

/**
 * For a sentinel that did not answer doctor's PING (sentinel-probe.ts), asked over TLS when `tls`: its
 * certificate is the sentinels' own, so a name it lacks is store.sentinel.servername's to give; a connection
 * that did not get through at all is a matter of store.sentinel.nodes, not store.url.
 */
export function sentinelProbeHint(error: string, tls: boolean): string {
  if (error === SILENT_SENTINEL) return SENTINEL_SILENT_HINT;
  if (!tls) return SENTINEL_PLAIN_UNREACHABLE_HINT;
  if (NAME_MISMATCH.test(error)) return SENTINEL_CERT_NAME_HINT;
  const hint = HINTS.find(([cause]) => cause.test(error))?.[1];
  return hint !== undefined && /certificate/i.test(hint) ? hint : SENTINEL_UNREACHABLE_HINT;
}

const SENTINEL_CERT_NAME_HINT = "the sentinel's certificate is trusted but does not hold the name Gatehouse verified (the detail says which it holds): set store.sentinel.servername to a name the sentinels' certificates hold (without it, store.tls.servername, or the address in store.sentinel.nodes, is the name verified)";
const SENTINEL_SILENT_HINT = `${SILENT_SENTINEL}: another service may hold that port, or the sentinel is stalled; check store.sentinel.nodes (host and port), and that a sentinel (redis-sentinel) listens there`;
const SENTINEL_UNREACHABLE_HINT = 'no TLS connection to the sentinel got through: check store.sentinel.nodes (host and port), and that the sentinel listens with TLS on that port (tls-port)';
const SENTINEL_PLAIN_UNREACHABLE_HINT = 'no connection to the sentinel got through: check store.sentinel.nodes (host and port), and that the sentinel listens in plain text on that port (for sentinels on a TLS port, write store.url as rediss://)';
