// The destinations an argument names: every URL, host or IP address in a tool call's arguments. The walk
// follows the tool's input schema: a field declared `format: uri` (or hostname, ipv4, ipv6…), or named like
// one (url, host, endpoint…), is read as a destination even when it is a bare name; every other string is
// scanned for URLs and for whole-string addresses. Hosts come out normalised by the WHATWG URL parser, which
// undoes the usual disguises: decimal, octal, hex and short IPv4, percent-encoding, IDN (to punycode), case,
// userinfo (`http://good@evil` is evil). Where parsers disagree (a backslash or an `@` in the authority),
// every reading is kept, so a destination is blocked if any of them is.

import { ownValue, wireTable } from '../../protocol/own-keys.js';

export interface Destination {
  /** Where in the arguments: `url`, `targets[2].href`. */
  path: string;
  /** The string as given (cut for messages). */
  value: string;
  /** Lower-case scheme without `:`, when the value is a URL. */
  scheme?: string;
  /** The host: a name (ASCII, no trailing dot) or an IP address (IPv6 without brackets). */
  host: string;
  /** The port, given or the scheme's default; undefined for a bare host without one. */
  port?: number;
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = wireTable({ http: 80, https: 443, ws: 80, wss: 443, ftp: 21, gopher: 70, ldap: 389, ldaps: 636, smtp: 25, redis: 6379, dict: 2628, sftp: 22, ssh: 22, telnet: 23, mysql: 3306, postgres: 5432, postgresql: 5432, mongodb: 27017 });
const URI_FORMATS = new Set(['uri', 'uri-reference', 'iri', 'iri-reference', 'url', 'hostname', 'idn-hostname', 'ipv4', 'ipv6', 'uri-template']);
const DESTINATION_NAME = /(^|[_-])(url|uri|urls|uris|href|link|host|hostname|hosts|endpoint|address|addr|ip|domain|server|target|webhook|callback|origin|proxy|redirect)$/i;
/** URLs inside free text: a scheme, `://`, and an authority. */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]{1,20}:\/\/[^\s"'<>`{}|^]+/gi;
/** What any host-naming string holds (destinationsOfString's shortcut for the rest). */
const MAY_NAME_A_HOST = /[.:]|\/\/|localhost/i;
const NONE: readonly Found[] = Object.freeze([]);
const MAX_STRINGS = 2_000;
const MAX_DEPTH = 32;

/** Every destination in `args`, read with the help of `schema` (a JSON Schema, possibly absent). */
export function destinationsIn(args: unknown, schema: unknown): Destination[] {
  const out: Destination[] = [];
  let strings = 0;
  const walk = (value: unknown, sch: unknown, path: string, key: string, depth: number): void => {
    if (depth > MAX_DEPTH || strings > MAX_STRINGS) return;
    if (typeof value === 'string') {
      strings++;
      const strict = isDestinationField(sch, key);
      for (const d of destinationsOfString(value, strict)) out.push({ ...d, path });
      return;
    }
    if (Array.isArray(value)) {
      const items = schemaPart(sch, 'items');
      value.forEach((v, i) => walk(v, items, `${path}[${i}]`, key, depth + 1));
      return;
    }
    if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        // Keys are scanned too: a URL used as a map key reaches the server just the same.
        if (k.includes('://')) for (const d of destinationsOfString(k, false)) out.push({ ...d, path: path === '' ? k : `${path}.${k}` });
        walk(v, propertySchema(sch, k), path === '' ? k : `${path}.${k}`, k, depth + 1);
      }
    }
  };
  walk(args, schema, '', '', 0);
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function schemaPart(sch: unknown, key: string): unknown {
  return isObject(sch) ? ownValue(sch, key) : undefined;
}

/**
 * The schema of the argument named `key`. Its own entry in `properties` only: an argument named
 * `constructor` must not find Object.prototype's (a function, no schema), and so escape
 * `additionalProperties`' format.
 */
function propertySchema(sch: unknown, key: string): unknown {
  if (!isObject(sch)) return undefined;
  const props = ownValue(sch, 'properties');
  const declared = isObject(props) ? ownValue(props, key) : undefined;
  if (declared !== undefined) return declared;
  const more = ownValue(sch, 'additionalProperties');
  return isObject(more) ? more : undefined;
}

function isDestinationField(sch: unknown, key: string): boolean {
  if (isObject(sch) && typeof sch.format === 'string' && URI_FORMATS.has(sch.format)) return true;
  return DESTINATION_NAME.test(key);
}

type Found = Omit<Destination, 'path'>;

/**
 * The destinations in one string. `strict`: the string is declared (or named) as a destination, so a bare
 * name or number is read as a host too. Otherwise URLs anywhere in it count, and the whole string counts
 * only when it plainly is an address or a dotted host name.
 */
export function destinationsOfString(text: string, strict: boolean): readonly Found[] {
  // Most strings in arguments are words and sentences: without `:`, `.`, `//` or "localhost" none of the
  // readings below can find a host in them (a URL needs `:`, an address or a dotted name `.` or `::`).
  if (!strict && !MAY_NAME_A_HOST.test(text)) return NONE;
  const value = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  const found: Found[] = [];
  const trimmed = text.trim();
  const whole = parseUrl(trimmed, value);
  if (whole.length > 0) found.push(...whole);
  else if (trimmed.startsWith('//')) found.push(...parseUrl(`http:${trimmed}`, value).map(({ scheme: _s, ...d }) => d));
  else if (strict || looksLikeHost(trimmed)) {
    const bare = parseBareHost(trimmed, value);
    if (bare) found.push(bare);
  }
  if (whole.length === 0 && text.includes('://')) {
    // exec on the one /g pattern rather than matchAll, which clones the pattern for every string.
    URL_IN_TEXT.lastIndex = 0;
    for (let m = URL_IN_TEXT.exec(text); m !== null; m = URL_IN_TEXT.exec(text)) found.push(...parseUrl(m[0], value));
  }
  return dedupe(found);
}

/** A dotted quad, an IPv6 literal, or a dotted name with an alphabetic top label (with an optional port). */
function looksLikeHost(s: string): boolean {
  if (s.length > 253 || /\s/.test(s)) return false;
  if (/^\[[0-9a-f:.%]+\](:\d+)?$/i.test(s)) return true;
  if (/^(\d{1,3}\.){3}\d{1,3}(:\d+)?$/.test(s)) return true;
  if (/^[0-9a-f:]+$/i.test(s) && s.includes('::')) return true;
  return /^(?=.{1,253}$)([a-z0-9-]{1,63}\.)+[a-z][a-z0-9-]{1,62}\.?(:\d{1,5})?$/i.test(s) || /^localhost\.?(:\d+)?$/i.test(s);
}

/** A URL with an authority (`scheme://host`), in every reading parsers may give it. */
function parseUrl(s: string, value: string): Found[] {
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)/i.exec(s);
  if (!m) return [];
  const scheme = m[1]!.toLowerCase();
  const authority = m[2]!;
  const readings: Found[] = [];
  // The WHATWG reading, through http: so that every scheme's host is normalised the same way. (The port
  // is read from the text: through http:, an explicit :80 would vanish as that scheme's default.)
  const viaHttp = hostPort(`http://${authority.replace(/\\/g, '/')}`);
  if (viaHttp) readings.push({ value, scheme, host: viaHttp.host, ...portOf(explicitPort(authority.replace(/\\.*$/, '')), scheme) });
  // Other readings of an ambiguous authority, as other parsers read it: the host after the last '@' with
  // backslashes kept in the userinfo (Python, curl), or after the first '@'.
  if (/[@\\]/.test(authority)) {
    const afterLast = authority.slice(authority.lastIndexOf('@') + 1).split('\\')[0]!;
    const afterFirst = authority.slice(authority.indexOf('@') + 1).split(/[\\@]/)[0]!;
    for (const alt of [afterLast, afterFirst]) {
      const hp = hostPort(`http://${alt}`);
      if (hp) readings.push({ value, scheme, host: hp.host, ...portOf(explicitPort(alt), scheme) });
    }
  }
  return readings;
}

function parseBareHost(s: string, value: string): Found | undefined {
  const hp = hostPort(`http://${s.replace(/\/.*$/, '')}`);
  if (!hp) return undefined;
  const port = explicitPort(s.replace(/\/.*$/, ''));
  return { value, host: hp.host, ...(port !== '' ? { port: Number(port) } : {}) };
}

function hostPort(url: string): { host: string; port: string } | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  let host = u.hostname;
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  while (host.endsWith('.')) host = host.slice(0, -1);
  if (host === '') return undefined;
  return { host: host.toLowerCase(), port: u.port };
}

/** The port written in an authority (`user@host:8080`, `[::1]:81`), or ''. */
function explicitPort(authority: string): string {
  const hostPart = authority.slice(authority.lastIndexOf('@') + 1);
  const m = /:(\d{1,5})$/.exec(hostPart);
  return m && !/^[^[]*:.*:/.test(hostPart) ? String(Number(m[1])) : hostPart.startsWith('[') && m ? String(Number(m[1])) : '';
}

function portOf(port: string, scheme: string): { port?: number } {
  if (port !== '') return { port: Number(port) };
  const d = DEFAULT_PORTS[scheme];
  return d !== undefined ? { port: d } : {};
}

function dedupe(found: Found[]): Found[] {
  const seen = new Set<string>();
  return found.filter((f) => {
    const k = `${f.scheme ?? ''}|${f.host}|${f.port ?? ''}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
