// The destinations an argument names: every URL, host or IP address in a tool call's arguments. The walk
// follows the tool's input schema: a field declared `format: uri` (or hostname, ipv4, ipv6…), or named like
// one (url, host, endpoint…), is read as a destination even when it is a bare name; every other string is
// scanned for URLs and for whole-string addresses. Hosts come out normalised by the WHATWG URL parser, which
// undoes the usual disguises: decimal, octal, hex and short IPv4, percent-encoding, IDN (to punycode), case,
// userinfo (`http://good@evil` is evil). Where parsers disagree (a backslash or an `@` in the authority),
// every reading is kept, so a destination is blocked if any of them is. A number is read only under a
// name that can only mean a host or an IP address (host, ip…): an integer there is the IPv4 address its
// digits write in a URL. A bare host is judged on the `port` argument beside it, when there is one. A URL
// nested in a URL's path, query or fragment (`https://ok.example/fetch?u=http://10.0.0.1/`) is a destination
// too, since a server may unwrap and fetch it (until 5 December it was swallowed by the outer one).

import { ownValue, wireTable } from '../../protocol/own-keys.js';

export interface Destination {
  /** Where in the arguments: `url`, `targets[2].href`. */
  path: string;
  /** The string as given (cut for messages). */
  value: string;
  /** Lower-case scheme without `:`, when the value is a URL. */
  scheme?: string;
  /**
   * The host: a name (ASCII, no trailing dot) or an IP address (IPv6 without brackets); '' for a URL that
   * names no host, judged by its scheme alone: a `file:` URL (`file:///etc/passwd`), which reaches the
   * server's own files, or, in a destination field, one such as `data:` or `javascript:`, which a browser
   * tool runs (see hostlessUrl).
   */
  host: string;
  /** The port, given or the scheme's default; undefined for a bare host without one. */
  port?: number;
  /**
   * Read as a host by its shape alone, where nothing says the server reaches it: a dotted word in free text
   * (`report.txt`, `main.py` are file names far more often than hosts), the host of a URL in a scheme no
   * client is known to fetch (`test://example-resource`, `note://abc`: a server's own identifiers), a value
   * still being typed (a completion). Such a name that resolves nowhere names no place anything can reach,
   * and is let through (egress-policy.ts); one that resolves, and any IP address, is judged as any other.
   */
  guess?: true;
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = wireTable({ http: 80, https: 443, ws: 80, wss: 443, ftp: 21, gopher: 70, ldap: 389, ldaps: 636, smtp: 25, redis: 6379, dict: 2628, sftp: 22, scp: 22, ssh: 22, telnet: 23, tftp: 69, smb: 445, mysql: 3306, postgres: 5432, postgresql: 5432, mongodb: 27017 });
const URI_FORMATS = new Set(['uri', 'uri-reference', 'iri', 'iri-reference', 'url', 'hostname', 'idn-hostname', 'ipv4', 'ipv6', 'uri-template']);
const DESTINATION_WORDS = 'url|uri|urls|uris|href|link|host|hostname|hosts|endpoint|address|addr|ip|domain|server|target|webhook|callback|origin|proxy|redirect';
const DESTINATION_NAME = new RegExp(`(^|[_-])(${DESTINATION_WORDS})$`, 'i');
/** The same words ending a camelCase name (`baseUrl`, `targetHost`, `serverIP`): a capital after a lower-case letter or digit. */
const DESTINATION_CAMEL = new RegExp(`[a-z0-9](${DESTINATION_WORDS.split('|').flatMap((w) => [w[0]!.toUpperCase() + w.slice(1), w.toUpperCase()]).join('|')})$`);
/**
 * The names under which a number is read as a host: those that can only mean a host or an IP address. An
 * integer there up to 2^32 - 1 is the IPv4 address a URL made of it reaches (`http://${host}/` with host
 * 2130706433 is http://127.0.0.1/, as WHATWG reads the digits in a string). Not the other destination words:
 * a number under `target`, `address` or `origin` is far more often a goal, a register or a coordinate.
 */
const HOST_WORDS = 'host|hostname|hosts|ip';
const HOST_NAME = new RegExp(`(^|[_-])(${HOST_WORDS})$`, 'i');
const HOST_CAMEL = new RegExp(`[a-z0-9](${HOST_WORDS.split('|').flatMap((w) => [w[0]!.toUpperCase() + w.slice(1), w.toUpperCase()]).join('|')})$`);
const MAX_IPV4 = 0xffff_ffff;
/**
 * The schemes the WHATWG URL standard calls special (file aside): after their colon it skips any run of
 * slashes and backslashes, so `http:127.0.0.1`, `http:/127.0.0.1` and `http:\\127.0.0.1` all name a host,
 * and fetch (undici) connects there.
 */
const SPECIAL_SCHEMES = new Set(['http', 'https', 'ws', 'wss', 'ftp']);
/**
 * Schemes beside those that curl-like clients (libcurl, and the language bindings and fetch-through services
 * built on it) fetch from a host: the classic ways from a URL to an internal service
 * (`gopher://10.0.0.1:6379/_…` writes to Redis, `dict://`, `ldap://`, `smb://`…).
 */
const CURL_SCHEMES = ['gopher', 'ldap', 'ldaps', 'dict', 'tftp', 'sftp', 'scp', 'smb', 'telnet'];
/**
 * The schemes whose URLs a server fetches, where a destination outside arguments' plain destination fields is
 * judged (a resources/read URI, a prompt's argument, a URL nested in a URL): the special schemes above, file:
 * (the server's own files, or a host's share), CURL_SCHEMES, and jar:, which names no host itself but wraps
 * the URL of the archive it reads (`jar:http://host/x.jar!/a`: that inner URL is the destination). Other
 * schemes (`demo://`, `test://`) are a server's own identifiers.
 */
export const FETCHED_SCHEMES: ReadonlySet<string> = new Set([...SPECIAL_SCHEMES, 'file', ...CURL_SCHEMES, 'jar']);
/**
 * URLs inside free text: a scheme, `://` and an authority; or a special scheme, a colon, any slashes and
 * an authority. The scheme may follow any character that cannot be part of one (`see_http://…`).
 */
const URL_IN_TEXT = /(?<![a-z0-9+.-])(?:[a-z][a-z0-9+.-]{1,20}:\/\/|(?:https?|wss?|ftp):[\\/]*(?=[^\s"'<>`{}|^\\/]))[^\s"'<>`{}|^]+/gi;
/**
 * `file:` URLs inside free text: the scheme and a slash or backslash (`file:/p`, `file:///p`, `file:\\srv\share`,
 * which the WHATWG parser reads alike). As a whole string, `file:` with anything after it.
 */
const FILE_URL_IN_TEXT = /(?<![a-z0-9+.-])file:[\\/][^\s"'<>`{}|^]*/gi;
/** The start of a URL with an authority: its scheme, the slashes (or backslashes) after it, the authority. */
const URL_START = /^([a-z][a-z0-9+.-]*):([\\/]*)([^/?#]*)/i;
/**
 * An IPv6 literal's zone id (`[fe80::1%25eth0]`, `[fe80::1%eth0]`). The WHATWG parser refuses it, so fetch
 * does not go there, but other clients (Python's, curl) connect to the address on that interface: it is
 * judged as the address.
 */
const ZONE_ID = /(\[[0-9a-f:.]+)%[^\]]*\]/i;
/** An IPv6 address without brackets, at least two colons, with an optional zone id (dropped). */
const UNBRACKETED_IPV6 = /^((?=[0-9a-f.]*:[0-9a-f.]*:)[0-9a-f:.]+)(?:%[a-z0-9_.~-]+)?$/i;
/**
 * A scheme and its colon, then neither a digit (a port) nor a colon (IPv6). Tried only where parseUrl read no
 * authority, so `javascript://%0aalert(1)` (a comment, then script) is one too.
 */
const HOSTLESS_URL = /^([a-z][a-z0-9+.-]*):(?![0-9:])/i;
/**
 * The schemes whose URLs reach or run something with no host in them: file: (the server's own files), what
 * a browser runs or loads from memory (javascript:, vbscript:, data:, blob:, filesystem:, about:,
 * view-source:, jar:), and what hands the value to another program that sends it somewhere (mailto:, tel:,
 * sms:, sip:, news:, Android's intent:). An allow of schemes judges a `word:` before text only when the word
 * is one of these (egress-policy.ts hostlessBlock), and they are read so whatever follows the colon.
 */
export const HOSTLESS_SCHEMES: ReadonlySet<string> = new Set(['file', 'javascript', 'vbscript', 'livescript', 'data', 'blob', 'filesystem', 'about', 'view-source', 'jar', 'mailto', 'tel', 'sms', 'callto', 'sip', 'sips', 'news', 'intent']);
/** Any scheme and its colon, for the schemes above. */
const SCHEME_AND_COLON = /^([a-z][a-z0-9+.-]*):/i;
/**
 * A URL of a scheme a server fetches (FETCHED_SCHEMES; a jar: URL's inner URL is found by itself), nested in
 * the path, query or fragment of another
 * (`https://ok.example/fetch?u=http://10.0.0.1/`, `http://ok.example/#http://169.254.169.254/`): a server, or
 * a fetch-through service it calls, may unwrap and fetch it. It ends where free text ends a URL, and at
 * `&`, which ends a query parameter (`?u=http://10.0.0.1&lang=en` unwraps to `http://10.0.0.1`).
 */
const NESTED_URL = new RegExp(`(?<![a-z0-9+.-])(?:(?:https?|wss?|ftp):[\\\\/]*(?=[^\\s"'<>\`{}|^\\\\/&])|file:[\\\\/]|(?:${CURL_SCHEMES.join('|')})://(?=[^\\s"'<>\`{}|^\\\\/&]))[^\\s"'<>\`{}|^&]*`, 'gi');
const WHITESPACE = /\s/;
/**
 * A scheme-relative URL as a query parameter's value (`?next=//10.0.0.1/`, the open-redirect shape): a
 * server resolving it against its own base (`new URL(next, base)`) fetches that host over http or https.
 * Only after `=`: elsewhere a `//` is a path's doubled slash.
 */
const NESTED_SCHEME_RELATIVE = /(?<==)[\\/]{2}(?=[^\s"'<>`{}|^\\/&])[^\s"'<>`{}|^&]*/g;
/** Whether the rest of a URL may hold a nested one: a colon, or `=//`, plain or percent-encoded. */
const MAY_NEST = /:|%3a|=[\\/]{2}|=%(?:2f|5c)%(?:2f|5c)/gi;
/** A percent-encoded ASCII character: the rest of a URL is decoded once, as a server reading its query does. */
const PERCENT_ASCII = /%([0-7][0-9a-f])/gi;
/**
 * Bounds on URLs nested in a URL: at most MAX_NESTED_URLS found in one string, at most MAX_URL_NESTING
 * levels deep (a URL in a URL in a URL…). Past either the string is unread (NestedUrlsUnread), and refused,
 * since what was not unwrapped was not judged.
 */
export const MAX_NESTED_URLS = 32;
export const MAX_URL_NESTING = 4;

/**
 * Thrown by destinationsOfString for a string past the nested-URL bounds. An exception, not a flag beside
 * the destinations, so that a caller that forgets it fails the call instead of passing what was not read;
 * destinationsIn and destinationsOfUri turn it into their `unread`.
 */
export class NestedUrlsUnread extends RangeError {
  constructor() {
    super(`more than ${MAX_NESTED_URLS} URLs nested in URLs, or nested more than ${MAX_URL_NESTING} deep`);
  }
}

/** What any host-naming string holds (destinationsOfString's shortcut for the rest). */
const MAY_NAME_A_HOST = /[.:]|\/\/|localhost/i;
const NONE: readonly Found[] = Object.freeze([]);
/** Bounds on the walk; arguments past them are refused, not passed (see DestinationsFound). */
export const MAX_STRINGS = 100_000;
/** listen.maxJsonDepth's own maximum: nothing the front door accepts is too deep to read. */
export const MAX_DEPTH = 1_000;
/**
 * JSON text inside a string (`{"payload": "{\"host\":\"10.0.0.1\"}"}`) is parsed and read too: a server
 * that decodes it connects to the host in it. At most this many levels of JSON text inside JSON text, and
 * this many characters of it parsed in all per call; past either the arguments are unread (refused), since
 * what was not parsed was not judged. Each level is no longer than the string holding it, so the parsing
 * costs at most MAX_JSON_TEXT_CHARS whatever the body limit.
 */
export const MAX_JSON_TEXT_LEVELS = 8;
export const MAX_JSON_TEXT_CHARS = 4 * 1024 * 1024;

/**
 * The destinations an argument list names, and whether it was read whole: arguments nested deeper than
 * MAX_DEPTH, holding more than MAX_STRINGS strings or more JSON text than MAX_JSON_TEXT_LEVELS and
 * MAX_JSON_TEXT_CHARS allow are not, and a check must refuse them rather than pass what it did not read.
 */
export interface DestinationsFound {
  found: Destination[];
  unread: boolean;
}

/** Every destination in `args`, read with the help of `schema` (a JSON Schema, possibly absent). */
export function destinationsIn(args: unknown, schema: unknown): DestinationsFound {
  const out: Destination[] = [];
  let strings = 0;
  let jsonChars = 0;
  let unread = false;
  // Whether the last key asked about names a host: an array of numbers asks for one key again and again.
  let hostKey: string | undefined;
  let namesHost = false;
  // `port`: the sibling `port` argument of the object holding the value (siblingPort), for a bare host.
  const walk = (value: unknown, sch: unknown, path: string, key: string, depth: number, level: number, port?: number): void => {
    if (unread) return;
    if (depth > MAX_DEPTH || strings >= MAX_STRINGS) {
      unread = true;
      return;
    }
    if (typeof value === 'string') {
      strings++;
      const strict = isDestinationField(sch, key);
      const inString = readString(value, strict);
      if (inString === undefined) return;
      for (const d of inString) out.push(port !== undefined && d.port === undefined && d.scheme === undefined ? { ...d, port, path } : { ...d, path });
      if (!mayBeJsonText(value)) return;
      if (level >= MAX_JSON_TEXT_LEVELS || jsonChars + value.length > MAX_JSON_TEXT_CHARS) {
        unread = true;
        return;
      }
      jsonChars += value.length;
      let inner: unknown;
      try {
        inner = JSON.parse(value);
      } catch {
        return; // Not JSON after all: read as text above.
      }
      // The schema describes the string, not what it encodes; the key stays, so a JSON-encoded string in a
      // field named host is still read as a host.
      walk(inner, undefined, `${path}(JSON)`, key, depth + 1, level + 1);
      return;
    }
    if (typeof value === 'number') {
      // The cheap test first: most numbers are no integer in range, or sit under no host-named key.
      if (!Number.isInteger(value) || value < 0 || value > MAX_IPV4) return;
      if (key !== hostKey) {
        hostKey = key;
        namesHost = HOST_NAME.test(key) || HOST_CAMEL.test(key);
      }
      if (namesHost) out.push({ value: String(value), host: ipv4Of(value), path, ...(port !== undefined ? { port } : {}) });
      return;
    }
    if (Array.isArray(value)) {
      const items = schemaPart(sch, 'items');
      value.forEach((v, i) => walk(v, items, `${path}[${i}]`, key, depth + 1, level, port));
      return;
    }
    if (value !== null && typeof value === 'object') {
      const sibling = siblingPort(value as Record<string, unknown>);
      for (const [k, v] of Object.entries(value)) {
        // Keys are scanned too: a URL used as a map key reaches the server just the same.
        if (k.includes('://')) for (const d of readString(k, false) ?? NONE) out.push({ ...d, path: path === '' ? k : `${path}.${k}` });
        walk(v, propertySchema(sch, k), path === '' ? k : `${path}.${k}`, k, depth + 1, level, sibling);
      }
    }
  };
  /** destinationsOfString, or undefined (the arguments unread) past its nested-URL bounds. */
  const readString = (text: string, strict: boolean): readonly Found[] | undefined => {
    try {
      return destinationsOfString(text, strict);
    } catch (err) {
      if (!(err instanceof NestedUrlsUnread)) throw err;
      unread = true;
      return undefined;
    }
  };
  walk(args, schema, '', '', 0, 0);
  return { found: out, unread };
}

/**
 * An object's own `port` member, a number or digits from 0 to 65535: the port a bare host beside it
 * (`{"host": "db.example.com", "port": 22}`, as database, SSH and Redis tools take them) is reached on, so
 * an allow's port list applies to it. A host that names a port or a scheme keeps its own.
 */
function siblingPort(o: Record<string, unknown>): number | undefined {
  const p = ownValue(o, 'port');
  const n = typeof p === 'number' ? p : typeof p === 'string' && /^\d{1,5}$/.test(p) ? Number(p) : undefined;
  return n !== undefined && Number.isInteger(n) && n >= 0 && n <= 65_535 ? n : undefined;
}

/**
 * Whether a string may be JSON text worth parsing: an object, an array or a string, whitespace around it
 * allowed. (Bare numbers and words are JSON too, but hold no host the text scan does not read already.)
 * Most strings fail on their first character.
 */
function mayBeJsonText(s: string): boolean {
  const first = s.charCodeAt(0);
  if (first !== 0x7b && first !== 0x5b && first !== 0x22 && first !== 0x20 && first !== 0x09 && first !== 0x0a && first !== 0x0d) return false;
  const t = s.trim();
  const open = t.charCodeAt(0);
  const close = t.charCodeAt(t.length - 1);
  return t.length >= 2 && ((open === 0x7b && close === 0x7d) || (open === 0x5b && close === 0x5d) || (open === 0x22 && close === 0x22));
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
  if (declaresDestination(sch)) return true;
  // A format inside a union is the field's too: pydantic writes Optional[HttpUrl] as
  // `anyOf: [{type: string, format: uri}, {type: null}]`.
  if (isObject(sch)) {
    for (const union of ['anyOf', 'oneOf', 'allOf']) {
      const options = ownValue(sch, union);
      if (Array.isArray(options) && options.some(declaresDestination)) return true;
    }
  }
  return DESTINATION_NAME.test(key) || DESTINATION_CAMEL.test(key);
}

function declaresDestination(sch: unknown): boolean {
  if (!isObject(sch)) return false;
  const format = ownValue(sch, 'format');
  return typeof format === 'string' && URI_FORMATS.has(format);
}

type Found = Omit<Destination, 'path'>;

/** The dotted quad of an integer in 0..2^32 - 1. */
function ipv4Of(n: number): string {
  return `${Math.floor(n / 0x100_0000)}.${Math.floor(n / 0x1_0000) % 256}.${Math.floor(n / 0x100) % 256}.${n % 256}`;
}

/**
 * The destinations in one string. `strict`: the string is declared (or named) as a destination, so a bare
 * name or number is read as a host too. Otherwise URLs anywhere in it count, and the whole string counts
 * only when it plainly is an address or a dotted host name. URLs nested in the URLs found count too
 * (nestedUrls); past their bounds it throws NestedUrlsUnread.
 */
export function destinationsOfString(text: string, strict: boolean): readonly Found[] {
  // Most strings in arguments are words and sentences: without `:`, `.`, `//` or "localhost" none of the
  // readings below can find a host in them (a URL needs `:`, an address or a dotted name `.` or `::`).
  if (!strict && !MAY_NAME_A_HOST.test(text)) return NONE;
  const value = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  const found: Found[] = [];
  const trimmed = wholeUrlText(text);
  const whole = parseUrl(trimmed, value);
  // One count for every URL nested in this string, whichever reading found it.
  let nested = 0;
  // The URL the whole string starts with ends at its first space, as in free text: what follows is read below.
  const wholeUrl = whole.length > 0 ? (WHITESPACE.test(trimmed) ? trimmed.slice(0, trimmed.search(WHITESPACE)) : trimmed) : '';
  if (whole.length > 0) {
    found.push(...whole);
    nested = nestedUrls(wholeUrl, value, found, nested, 1);
  }
  // Scheme-relative: the scheme is the base's, http or https, so both are judged (a rule allowing only https
  // must not pass what an http base would fetch).
  else if (trimmed.startsWith('//')) {
    found.push(...parseUrl(`http:${trimmed}`, value), ...parseUrl(`https:${trimmed}`, value));
    nested = nestedUrls(`http:${trimmed}`, value, found, nested, 1);
  } else if (strict || looksLikeHost(trimmed)) {
    const bare = parseBareHost(trimmed, value);
    if (bare) found.push(strict ? bare : { ...bare, guess: true });
    if (strict) {
      const hostless = hostlessUrl(trimmed, value);
      if (hostless) found.push(hostless);
    }
  }
  // Always, even when the string starts with a URL: a second one may follow it.
  if (text.includes(':')) {
    // exec on the one /g pattern rather than matchAll, which clones the pattern for every string.
    URL_IN_TEXT.lastIndex = 0;
    for (let m = URL_IN_TEXT.exec(text); m !== null; m = URL_IN_TEXT.exec(text)) {
      found.push(...parseUrl(m[0], value));
      // The whole string's URL had its nested URLs read above.
      if (m[0] !== wholeUrl) nested = nestedUrls(m[0], value, found, nested, 1);
    }
    if (/^file:/i.test(trimmed)) found.push(fileUrl(trimmed, value));
    if (/file:/i.test(text)) {
      FILE_URL_IN_TEXT.lastIndex = 0;
      for (let m = FILE_URL_IN_TEXT.exec(text); m !== null; m = FILE_URL_IN_TEXT.exec(text)) found.push(fileUrl(m[0], value));
    }
  }
  return dedupe(found);
}

/**
 * The URLs nested in the path, query or fragment of `url` (NESTED_URL, NESTED_SCHEME_RELATIVE), as written and percent-decoded once
 * (`?u=http%3A%2F%2F10.0.0.1%2F`), and those nested in them in turn, `level` counting from 1, pushed to
 * `found`. `count`: the nested URLs found in the string so far; returns it with these added.
 */
function nestedUrls(url: string, value: string, found: Found[], count: number, level: number): number {
  // No colon after the scheme's, the usual URL: nothing allocated. (A port's colon costs the exec below.)
  MAY_NEST.lastIndex = url.indexOf(':') + 1;
  if (!MAY_NEST.test(url)) return count;
  const authority = URL_START.exec(url);
  if (authority === null) return count;
  const end = authority[0].length;
  MAY_NEST.lastIndex = end;
  if (!MAY_NEST.test(url)) return count;
  const rest = url.slice(end);
  const decoded = rest.includes('%') ? rest.replace(PERCENT_ASCII, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) : rest;
  const nested: string[] = [];
  for (const text of decoded === rest ? [rest] : [rest, decoded]) {
    NESTED_URL.lastIndex = 0;
    for (let m = NESTED_URL.exec(text); m !== null; m = NESTED_URL.exec(text)) if (!nested.includes(m[0])) nested.push(m[0]);
    NESTED_SCHEME_RELATIVE.lastIndex = 0;
    for (let m = NESTED_SCHEME_RELATIVE.exec(text); m !== null; m = NESTED_SCHEME_RELATIVE.exec(text)) if (!nested.includes(m[0])) nested.push(m[0]);
  }
  if (nested.length === 0) return count;
  let total = count + nested.length;
  if (level > MAX_URL_NESTING || total > MAX_NESTED_URLS) throw new NestedUrlsUnread();
  for (const inner of nested) {
    // Scheme-relative: the base's scheme, http or https, so both are judged (as for a whole string).
    const absolute = /^[\\/]/.test(inner) ? `http:${inner}` : inner;
    if (absolute !== inner) found.push(...parseUrl(absolute, value), ...parseUrl(`https:${inner}`, value));
    else if (/^file:/i.test(inner)) found.push(fileUrl(inner, value));
    else found.push(...parseUrl(inner, value));
    total = nestedUrls(absolute, value, found, total, level + 1);
  }
  return total;
}

/** Any C0 control character: the fast test, since most strings hold none. */
const C0 = /[\x00-\x1f]/;
const C0_OR_SPACE_AT_ENDS = /^[\x00-\x20]+|[\x00-\x20]+$/g;
const TAB_OR_NEWLINE = /[\t\n\r]/g;

/**
 * A whole string as the WHATWG URL parser reads it (URL Standard, basic URL parser steps 1–3): C0 controls
 * and spaces at either end dropped, every tab and newline inside removed. A browser tool opens
 * `java\tscript:alert(1)` or `\x01data:text/html,…` as javascript: and data: URLs; until 5 December the
 * patterns below stopped at those characters and found no URL. Only for readings of the whole string: in
 * free text a newline ends a URL. Other whitespace is kept (JS trim drops it at the ends, as it did).
 */
function wholeUrlText(text: string): string {
  const t = text.trim();
  return C0.test(t) ? t.replace(C0_OR_SPACE_AT_ENDS, '').replace(TAB_OR_NEWLINE, '') : t;
}

/**
 * A URL with a scheme and no authority (`data:…`, `javascript:…`, `blob:…`, `mailto:…`) in a destination
 * field: a browser tool opening it runs or shows what it holds, fetches included (which base64 or string
 * building hides from the URL scan), so an allow listing schemes must be able to refuse it. Judged by its
 * scheme alone, like a local file: URL. Not a host and port (`localhost:6379`, `api.example.com:443`: a
 * digit after the colon) nor an IPv6 address without brackets (`fe80::1`): those are read as hosts. A
 * reading added beside the bare-host one, never instead of it; only when parseUrl found no host. Any word
 * before a colon is read so (`note:hello` too, which a deny naming `note` refuses); an allow of schemes
 * judges only the schemes a client acts on (HOSTLESS_SCHEMES).
 */
function hostlessUrl(s: string, value: string): Found | undefined {
  // A digit or a colon after it makes a word a host and port (`localhost:6379`) or IPv6 (`fe80::1`), but not
  // one of HOSTLESS_SCHEMES: `javascript:0;fetch(…)` is a script (until 5 December it was neither, and
  // passed an https-only allow).
  const m = HOSTLESS_URL.exec(s) ?? hostlessSchemeOf(s);
  if (!m) return undefined;
  const scheme = m[1]!.toLowerCase();
  if (SPECIAL_SCHEMES.has(scheme) || scheme === 'file' || UNBRACKETED_IPV6.test(s)) return undefined;
  return { value, scheme, host: '' };
}

/** The scheme match of a string that starts with one of HOSTLESS_SCHEMES and its colon, whatever follows. */
function hostlessSchemeOf(s: string): RegExpExecArray | undefined {
  const m = SCHEME_AND_COLON.exec(s);
  return m !== null && HOSTLESS_SCHEMES.has(m[1]!.toLowerCase()) ? m : undefined;
}

/** A dotted quad, an IPv6 literal, or a dotted name with an alphabetic top label (with an optional port). */
function looksLikeHost(s: string): boolean {
  if (s.length > 253 || /\s/.test(s)) return false;
  if (/^\[[0-9a-f:.]+(%[a-z0-9_.~-]+)?\](:\d+)?$/i.test(s)) return true;
  if (/^(\d{1,3}\.){3}\d{1,3}(:\d+)?$/.test(s)) return true;
  if (UNBRACKETED_IPV6.test(s)) return true;
  return /^(?=.{1,253}$)([a-z0-9-]{1,63}\.)+[a-z][a-z0-9-]{1,62}\.?(:\d{1,5})?$/i.test(s) || /^localhost\.?(:\d+)?$/i.test(s);
}

/** A URL with an authority (`scheme://host`), in every reading parsers may give it. */
function parseUrl(s: string, value: string): Found[] {
  const m = URL_START.exec(s);
  if (!m) return [];
  const scheme = m[1]!.toLowerCase();
  // Other schemes have an authority only after exactly `//`.
  if (!SPECIAL_SCHEMES.has(scheme) && m[2] !== '//') return [];
  // A scheme no client is known to fetch from a host: its "host" is a server's identifier unless it resolves.
  const guess = DEFAULT_PORTS[scheme] === undefined && !FETCHED_SCHEMES.has(scheme);
  // A special scheme's authority ends at a backslash too (read below as other parsers read it).
  const authority = m[3]!;
  if (authority === '') return [];
  const readings: Found[] = [];
  // The WHATWG reading, through http: so that every scheme's host is normalised the same way. (The port
  // is read from the text: through http:, an explicit :80 would vanish as that scheme's default.)
  const viaHttp = hostPort(`http://${authority.replace(/\\/g, '/')}`);
  if (viaHttp) readings.push({ value, scheme, host: viaHttp.host, ...portOf(explicitPort(authority.replace(/\\.*$/, '')), scheme), ...(guess ? { guess: true } : {}) });
  // Other readings of an ambiguous authority, as other parsers read it: the host after the last '@' with
  // backslashes kept in the userinfo (Python, curl), or after the first '@'.
  if (/[@\\]/.test(authority)) {
    const afterLast = authority.slice(authority.lastIndexOf('@') + 1).split('\\')[0]!;
    const afterFirst = authority.slice(authority.indexOf('@') + 1).split(/[\\@]/)[0]!;
    for (const alt of [afterLast, afterFirst]) {
      const hp = hostPort(`http://${alt}`);
      if (hp) readings.push({ value, scheme, host: hp.host, ...portOf(explicitPort(alt), scheme), ...(guess ? { guess: true } : {}) });
    }
  }
  return readings;
}

/**
 * A `file:` URL as the WHATWG parser reads it: with no host (`file:///p`, `file:/p`, and `file://localhost/p`,
 * which it empties) a local file, judged by its scheme alone; with one (`file://srv/share`, `file:\\srv\share`,
 * a UNC path that Windows opens over SMB) that host. What does not parse is taken as local: its scheme is
 * judged all the same.
 */
function fileUrl(s: string, value: string): Found {
  let host = '';
  try {
    host = new URL(s.replace(ZONE_ID, '$1]')).hostname;
  } catch {
    // Judged by the scheme as a local file.
  }
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  while (host.endsWith('.')) host = host.slice(0, -1);
  return { value, scheme: 'file', host: host.toLowerCase() };
}

function parseBareHost(s: string, value: string): Found | undefined {
  // An IPv6 address written without brackets (`::1`, `fe80::1%eth0`) is a host with no port: in a URL it
  // would need brackets, without which the WHATWG parser refuses it, and a client connecting to it does not.
  const ipv6 = UNBRACKETED_IPV6.exec(s);
  if (ipv6) {
    const hp = hostPort(`http://[${ipv6[1]}]`);
    return hp ? { value, host: hp.host } : undefined;
  }
  const hp = hostPort(`http://${s.replace(/\/.*$/, '')}`);
  if (!hp) return undefined;
  const port = explicitPort(s.replace(/\/.*$/, ''));
  return { value, host: hp.host, ...(port !== '' ? { port: Number(port) } : {}) };
}

function hostPort(url: string): { host: string; port: string } | undefined {
  let u: URL;
  try {
    u = new URL(url.replace(ZONE_ID, '$1]'));
  } catch {
    return undefined;
  }
  let host = u.hostname;
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  while (host.endsWith('.')) host = host.slice(0, -1);
  if (host === '') return undefined;
  return { host: host.toLowerCase(), port: u.port };
}

/**
 * The port written in an authority (`user@host:8080`, `[::1]:81`), or ''. As the WHATWG parser reads it:
 * tabs and newlines dropped, leading zeros allowed (`:000080` is 80).
 */
function explicitPort(authority: string): string {
  const hostPart = authority.slice(authority.lastIndexOf('@') + 1).replace(/[\t\n\r]/g, '');
  const m = /:(\d+)$/.exec(hostPart);
  return m && !/^[^[]*:.*:/.test(hostPart) ? String(Number(m[1])) : hostPart.startsWith('[') && m ? String(Number(m[1])) : '';
}

/** The port a URL of `scheme` reaches when it names none (http 80, https 443, ssh 22…), if Gatehouse knows it. */
export function defaultPortOf(scheme: string): number | undefined {
  return DEFAULT_PORTS[scheme];
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
