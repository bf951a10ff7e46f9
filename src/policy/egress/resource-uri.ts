// Which destinations a resources/read URI names, for the egress stage. An upstream that reads a resource by
// fetching its URI (a web reader, a proxying server) reaches the host in it as a fetch tool would; a custom
// scheme (`demo://…`, `postgres://…/schema`, `note:…`) is the server's own identifier, which Gatehouse
// neither resolves nor judges. Only what this file decides is a place to fetch is read; the rest is not.

import { destinationsOfString, FETCHED_SCHEMES, NestedUrlsUnread, type DestinationsFound } from './destinations.js';

/**
 * The schemes a resources/read is judged on, FETCHED_SCHEMES: the WHATWG special schemes (what fetch, undici
 * and every browser-derived client connect for: http, https, ws, wss, ftp), file: (the server's own files,
 * judged by the egress rules' schemes, or by its host where it names one: `file://srv/share`), what
 * curl-like clients fetch (gopher, ldap, ldaps, dict, tftp, sftp, scp, smb, telnet; until 5 December a
 * `gopher://10.0.0.1:6379/_…` URI was a custom scheme here, and passed unjudged), and jar:, judged by the
 * URL of the archive inside it. Case-insensitive, as URL schemes are (RFC 3986 §3.1).
 */
const FETCHED_SCHEME = new RegExp(`^(?:${[...FETCHED_SCHEMES].join('|')}):`, 'i');

/**
 * A URI that starts with a plain scheme and its colon. One that does not (leading spaces or controls, a tab
 * inside the scheme, no scheme at all) is read whole: the WHATWG parser drops such characters, so
 * `\thttp://169.254.169.254/` or `ht\ntp://…` is an http URL to a server that fetches it.
 */
const PLAIN_SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/**
 * Whether the egress stage must read this URI: a custom scheme costs these two regular-expression tests
 * and nothing else (no allocation, no resolution).
 */
export function mayNameDestination(uri: string): boolean {
  return FETCHED_SCHEME.test(uri) || !PLAIN_SCHEME.test(uri);
}

/**
 * The destinations in a URI `mayNameDestination` selected (every reading of its authority: `http://a@b`,
 * and the URLs nested in it: `https://reader.example/?u=http://10.0.0.1/`), read as free text is in a
 * tool's arguments, so a URI and an argument holding the same text are judged alike. `path` is `uri`.
 * `unread`: it nests more URLs than destinations.ts reads, and must be refused.
 */
export function destinationsOfUri(uri: string): DestinationsFound {
  try {
    return { found: destinationsOfString(uri, false).map((d) => ({ ...d, path: 'uri' })), unread: false };
  } catch (err) {
    if (!(err instanceof NestedUrlsUnread)) throw err;
    return { found: [], unread: true };
  }
}
