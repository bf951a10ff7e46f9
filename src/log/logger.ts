// Structured logs: one JSON object per line (`level` as a label, ISO `time`, bound fields, `msg`, then the
// call's fields), levels from config. Built on pino because it is a fast JSON-lines logger whose field names
// (`level`, `time`, `msg`) log shippers already understand; Gatehouse keeps its own small `Logger` interface
// in front of it so call sites stay `log.info(msg, fields)` and tests can capture lines through a
// synchronous `write` callback.
//
// Callers pass names and ids, not header values; as a second line of defence every line is scrubbed of
// anything shaped like a credential (fields named like one, bearer values, JWTs, Gatehouse API keys) and of
// the literal secret values the config holds (see secrets.ts), so a careless field added later cannot leak.

import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { setOwn } from '../protocol/own-keys.js';
/** Levels, least severe first. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
  enabled(level: LogLevel): boolean;
  /** Scrubs these literal values from every later line of this logger, its parent and its children. */
  addSecrets(values: Iterable<string>): void;
  /**
   * `text` with credential-shaped pieces and the configured secret values replaced, as every line is
   * scrubbed: for a text that is cut short before it is logged, which must be scrubbed before the cut (a
   * secret the cut runs through is no longer whole, and its first part would pass).
   */
  scrub(text: string): string;
  /**
   * How many times secret values were added so far: a text `scrub` left as it was stays so until this
   * changes (a cache of clean texts, such as tracing's, starts anew when it does).
   */
  secretsGeneration(): number;
  /** Writes out the lines held back for batching (before the process says something on its own). */
  flush(): void;
  /**
   * One info line whose fields the caller has already serialised as JSON members (`"a":1,"b":"x"`), for the
   * line written per request: no object is built, copied or walked. The caller vouches that the members hold
   * no credential (client-chosen strings go through `redactText` first); configured secret values are
   * still scrubbed from the finished line.
   */
  infoMembers(msg: string, members: string): void;
}

/** Where log lines go; `flush` writes out any it holds back (batching). */
export type LogWrite = ((line: string) => void) & { flush?: () => void };

export interface LoggerOptions {
  /** Literal secret values to scrub from every line, e.g. `collectSecrets(config)`. */
  secrets?: Iterable<string>;
  /** `pretty`: readable, coloured lines for a terminal (after scrubbing); JSON lines otherwise. */
  format?: 'json' | 'pretty';
}

/** `log.format: auto` decides by where the lines go: a terminal gets pretty lines, anything else JSON. */
export function resolveLogFormat(format: 'auto' | 'json' | 'pretty', stream: { isTTY?: boolean } = process.stderr): 'json' | 'pretty' {
  return format === 'auto' ? (stream.isTTY === true ? 'pretty' : 'json') : format;
}

/** Turns a scrubbed JSON line into a readable one (pino-pretty), coloured unless NO_COLOR is set. */
function prettyLines(target: LogWrite): LogWrite {
  // pino-pretty is loaded only for a terminal (about 7 MB of RSS a JSON-logging gateway does not pay; issue 17).
  const { prettyFactory } = createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty');
  const prettify = prettyFactory({ colorize: process.env.NO_COLOR === undefined, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', messageKey: 'msg', singleLine: false });
  const write: LogWrite = (line) => target(prettify(line));
  write.flush = () => target.flush?.();
  return write;
}

export const REDACTED = '[redacted]';

/**
 * stderr, written in batches: a busy gateway logs a line per request, and a write per line would cost a
 * system call each. Lines wait at most FLUSH_MS, short enough that nobody notices (or until a batch of
 * FLUSH_BYTES is full); those still pending are written when the process exits.
 *
 * Each line is encoded into the batch's buffer as it comes, while its text is still in the CPU's caches.
 * Joining the lines of a batch into one string when it is written (as this did until 2 December) walked
 * each line's pieces again 5 ms later, and then the string was encoded for the pipe: measured in a CPU
 * profile of the pass-through at c=16, those two were about 1 µs of the ~3 µs a request line cost.
 *
 * A pipe's reader (the container runtime, a log shipper) may be slower than the gateway, and what it has
 * not taken yet is held in this process's memory, without limit. So past MAX_BACKLOG_BYTES waiting, batches
 * are dropped and counted instead, and the first batch written after says how many lines were lost (the
 * audit, not the log, is the record of calls).
 */

const FLUSH_MS = 5;
const FLUSH_BYTES = 64 * 1024;
const MAX_BACKLOG_BYTES = 1024 * 1024;
/** The most bytes a UTF-16 code unit can take in UTF-8: a line fits when its length times this does. */
const UTF8_MAX_PER_UNIT = 3;

/** Where batches go: stderr, or a test's stream. */
export interface LogStream {
  write(chunk: Uint8Array | string): unknown;
  /**
   * Bytes written but not yet taken by the reader. 0 right after `write` means the chunk was taken then
   * (Node's streams count a chunk until its write completes), so its buffer may be used again.
   */
  readonly writableLength: number;
}

export function batchedWriter(stream: LogStream = process.stderr, maxBacklogBytes = MAX_BACKLOG_BYTES): LogWrite {
  let batch = Buffer.allocUnsafe(FLUSH_BYTES);
  let used = 0;
  let lines = 0;
  let scheduled = false;
  let dropped = 0;
  /** Writes `count` lines, or drops and counts them when the reader is too far behind; true when written. */
  const emit = (chunk: Uint8Array | string, count: number): boolean => {
    if (stream.writableLength > maxBacklogBytes) {
      dropped += count;
      return false;
    }
    if (dropped > 0) {
      stream.write(`{"level":"warn","time":"${isoNow()}","msg":"log lines dropped: the log reader fell behind","dropped":${dropped}}\n`);
      dropped = 0;
    }
    stream.write(chunk);
    return true;
  };
  const flush = (): void => {
    scheduled = false;
    if (used === 0) return;
    const count = lines;
    const chunk = batch.subarray(0, used);
    used = 0;
    lines = 0;
    // A stream that has not written the bytes yet holds on to them (stderr on a full pipe): the next batch
    // gets a buffer of its own. A pipe with room takes them at once, and a dropped batch was never handed
    // over: the buffer is used again.
    if (emit(chunk, count) && stream.writableLength > 0) batch = Buffer.allocUnsafe(FLUSH_BYTES);
  };
  process.on('exit', flush);
  const write: LogWrite = (line) => {
    if (used + line.length * UTF8_MAX_PER_UNIT > FLUSH_BYTES) {
      flush();
      // A line longer than a batch could hold goes out alone, after what was pending.
      if (line.length * UTF8_MAX_PER_UNIT > FLUSH_BYTES) {
        emit(line, 1);
        return;
      }
    }
    used += batch.write(line, used, 'utf8');
    lines++;
    if (!scheduled) {
      scheduled = true;
      setTimeout(flush, FLUSH_MS).unref();
    }
  };
  write.flush = flush;
  return write;
}

export function createLogger(
  level: LogLevel,
  write: LogWrite = batchedWriter(),
  base: Record<string, unknown> = {},
  opts: LoggerOptions = {},
): Logger {
  const secrets = new LiteralSecrets();
  if (opts.secrets) secrets.add(opts.secrets);
  if (opts.format === 'pretty') write = prettyLines(write);
  // pino writes each line to the destination synchronously, so `write` sees every line before the call returns.
  const destination: DestinationStream = { write: (line) => write(secrets.scrub(line)) };
  const root = pino(
    {
      level,
      // Bound fields are serialized once, when bound; pino's bindings formatter does not reach children, so
      // base and child fields are sanitized before pino sees them.
      base: sanitizeFields(base),
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (fields) => sanitizeFields(fields),
      },
      // Errors are already reduced to name/message/code by sanitizeFields; pino's own `err` serializer
      // would add the stack, which can quote request data.
      serializers: { err: (value: unknown) => value },
    },
    destination,
  );
  const sink: Sink = { secrets, write: (line) => write(secrets.scrub(line)), flush: () => write.flush?.() };
  return wrap(root, sink, bindingMembers(sanitizeFields(base)));
}

/** Where the lines of a logger and its children go. */
interface Sink {
  readonly secrets: LiteralSecrets;
  write(line: string): void;
  flush(): void;
}

let isoMs = NaN;
let isoText = '';
let isoSecond = NaN;
/** `2026-12-01T15:06:09.` of the second in `isoSecond`. */
let isoSecondPrefix = '';
/** `000Z` to `999Z`: the milliseconds and the zone that end an ISO time. */
const MILLIS_SUFFIX = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(3, '0')}Z`);

/**
 * `new Date(ms).toISOString()`, made once per second: within a second only the milliseconds change, and
 * a busy gateway reaches a new millisecond every few lines. A Date and its formatting cost about as much
 * as the rest of a request line together.
 */
export function isoTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    const full = new Date(second * 1000).toISOString();
    // Years outside 0000-9999 are written with a sign and six digits: those take the plain way.
    if (full.length !== 24) return new Date(ms).toISOString();
    isoSecond = second;
    isoSecondPrefix = full.slice(0, 20);
  }
  return isoSecondPrefix + MILLIS_SUFFIX[ms - second * 1000]!;
}

/** The ISO time of now, made once per millisecond: a busy gateway writes several lines (and audit records) in each. */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = isoTime(ms);
  }
  return isoText;
}

/**
 * The JSON text of a name Gatehouse chose or read from its config (a message, an upstream's name): the
 * same few recur on every request line, and `JSON.stringify` is a call into the runtime each time.
 * Bounded; never for a client's strings (request-log.ts scrubs and keeps those itself).
 */
export function nameJson(name: string): string {
  let text = nameTexts.get(name);
  if (text === undefined) {
    text = JSON.stringify(name);
    if (nameTexts.size >= NAME_TEXTS_MAX) nameTexts.clear();
    nameTexts.set(name, text);
  }
  return text;
}
const nameTexts = new Map<string, string>();
const NAME_TEXTS_MAX = 256;

/** How many names' JSON texts are kept (for tests). */
export function knownNames(): number {
  return nameTexts.size;
}

/** Bound fields as JSON members with their leading comma (`,"component":"audit"`), as pino writes them. */
function bindingMembers(fields: Record<string, unknown>): string {
  let out = '';
  for (const key in fields) if (fields[key] !== undefined) out += `,${JSON.stringify(key)}:${JSON.stringify(fields[key])}`;
  return out;
}

function wrap(p: PinoLogger, sink: Sink, bound: string): Logger {
  // `msg` travels inside the object (not as pino's message argument) so it is scrubbed with the fields and
  // printed before them, where people and the existing tests look for it.
  const at =
    (lvl: LogLevel) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      if (p.isLevelEnabled(lvl)) p[lvl]({ msg, ...fields });
    };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (fields) => {
      const clean = sanitizeFields(fields);
      return wrap(p.child(clean), sink, bound + bindingMembers(clean));
    },
    enabled: (lvl) => p.isLevelEnabled(lvl),
    addSecrets: (values) => sink.secrets.add(values),
    scrub: (text) => sink.secrets.scrubText(redactText(text)),
    secretsGeneration: () => sink.secrets.generation,
    flush: () => sink.flush(),
    infoMembers(msg, members) {
      // The same shape as pino's lines: level, time, bound fields, msg, then the fields.
      if (p.isLevelEnabled('info')) sink.write(`{"level":"info","time":"${isoNow()}"${bound},"msg":${nameJson(msg)}${members === '' ? '' : `,${members}`}}\n`);
    },
  };
}

/**
 * Field names whose values are secrets, compared lower-case with `-` and `_` removed: a bare `key`, and any
 * name that ends in a credential's word, so `githubToken`, `db_password` or `x-auth-token` are caught as
 * well as `token`. Names that only start with one (`tokenEndpoint`, `maxTokens`, `keyword`) are not.
 */
const SECRET_FIELD = /^(?:key|.*(?:authorization|cookie|password|passwd|passphrase|secret|token|apikey|privatekey|secretkey|signingkey|bearer|credentials?))$/;
/** Names that end like a credential without being one, and stay readable: ids, and MCP's progress token. */
const SAFE_FIELDS = new Set(['keyId', 'tokenId', 'progressToken', 'rejectedCredential']);
/**
 * Credential shapes inside free text: bearer values, JWTs (three base64url parts), Gatehouse keys. A JWT is
 * judged once per run of base64url characters, from where the run starts (the lookbehind): the lookahead
 * first asks whether the run goes on into two dots, then the run is taken from its start to its `eyJ` and
 * on. Tried at every `eyJ` inside a run instead, the scan to the run's end made a string of repeated `eyJ`
 * cost time by the square of its length (64 KB of it blocked the event loop for 0.7 s in an audited call's
 * arguments; a megabyte, minutes). A JWT glued to a word (`xeyJ…`) is still found; the word goes with it.
 */
const SECRET_TEXT = /(Bearer\s+)[A-Za-z0-9\-._~+/]+=*|(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.)[A-Za-z0-9_-]*?eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*|gh_[A-Za-z0-9_-]{20,}/gi;

/** The same shapes, as a quick yes/no before any copy is made (most strings hold no credential). */
const SECRET_TEXT_PRESENT = new RegExp(SECRET_TEXT.source, 'i');

export function redactText(s: string): string {
  if (!SECRET_TEXT_PRESENT.test(s)) return s;
  return s.replace(SECRET_TEXT, (_match, bearer: string | undefined) => (bearer ? `${bearer}${REDACTED}` : REDACTED));
}

/** Field names recur (a log line per request), so each is judged once. */
const secretFieldVerdicts = new Map<string, boolean>();
const REMEMBERED_FIELD_MAX = 64;

function isSecretField(key: string): boolean {
  let verdict = secretFieldVerdicts.get(key);
  if (verdict === undefined) {
    verdict = !SAFE_FIELDS.has(key) && SECRET_FIELD.test(key.toLowerCase().replace(/[-_]/g, ''));
    // Bounded in count and in length: argument names are a client's, and one may be most of a 1 MB body.
    if (secretFieldVerdicts.size < 10_000 && key.length <= REMEMBERED_FIELD_MAX) secretFieldVerdicts.set(key, verdict);
  }
  return verdict;
}

function sanitizeFields(fields: Record<string, unknown>): Record<string, unknown> {
  // Most lines are flat (ids, names, numbers): those need no cycle tracking.
  let flat = true;
  for (const key in fields) {
    const v = fields[key];
    if (typeof v === 'object' && v !== null) {
      flat = false;
      break;
    }
  }
  if (!flat) return sanitizeObject(fields, new WeakSet());
  const out: Record<string, unknown> = {};
  for (const key in fields) {
    const v = fields[key];
    out[key] = v !== undefined && isSecretField(key) ? REDACTED : typeof v === 'string' ? redactText(v) : v;
  }
  return out;
}

/** A copy of any value with credential-named fields and credential-shaped text replaced (audit records). */
export function redactValue(value: unknown): unknown {
  return sanitize(value, new WeakSet());
}

/**
 * Whether redactValue could change `value`. Plain JSON (what a request's arguments are) without a
 * credential-named field or credential-shaped text says no, and can be written as it is, without a copy.
 * Anything it is unsure of (an Error, a toJSON, a cycle, nesting over 64 deep) says yes.
 */
export function mayHoldSecrets(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return SECRET_TEXT_PRESENT.test(value);
  if (typeof value !== 'object' || value === null) return false;
  if (depth >= 64 || value instanceof Error || typeof (value as { toJSON?: unknown }).toJSON === 'function') return true;
  if (Array.isArray(value)) {
    for (const v of value) if (mayHoldSecrets(v, depth + 1)) return true;
    return false;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const v = (value as Record<string, unknown>)[key];
    if ((v !== undefined && isSecretField(key)) || mayHoldSecrets(v, depth + 1)) return true;
  }
  return false;
}

// A copy with credential-named fields and credential-shaped text replaced. Errors would serialize to {}, so
// they keep their name, message and code; a cycle becomes a marker instead of a crash.
function sanitize(value: unknown, ancestors: WeakSet<object>): unknown {
  if (typeof value === 'string') return redactText(value);
  if (typeof value !== 'object' || value === null) return value;
  if (ancestors.has(value)) return '[circular]';
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { name: value.name, message: redactText(value.message), ...(code !== undefined ? { code: sanitize(code, ancestors) } : {}) };
  }
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return sanitize((toJSON as () => unknown).call(value), ancestors);
  ancestors.add(value);
  const out = Array.isArray(value) ? value.map((v) => sanitize(v, ancestors)) : sanitizeObject(value as Record<string, unknown>, ancestors);
  ancestors.delete(value);
  return out;
}

function sanitizeObject(obj: Record<string, unknown>, ancestors: WeakSet<object>): Record<string, unknown> {
  ancestors.add(obj);
  const out: Record<string, unknown> = {};
  // setOwn: a member named `__proto__` stays a member of the copy. Assigned, it became the copy's prototype
  // and vanished from what the copy shows: an approval's preview hid it from the reviewer while the call
  // sent it upstream, and the audit's redacted arguments lost it.
  for (const [key, v] of Object.entries(obj)) setOwn(out, key, v !== undefined && isSecretField(key) ? REDACTED : sanitize(v, ancestors));
  ancestors.delete(obj);
  return out;
}

/** Shorter values would turn up inside ordinary words and ids; real credentials are longer. */
export const MIN_SECRET_LENGTH = 6;
/** A JSON string token, escapes included; keys and values alike. */
const JSON_STRING = /"(?:[^"\\]|\\.)*"/g;

/**
 * Configured secret values, scrubbed from finished lines so that fields bound into a child logger before
 * the secret was registered are covered too. Only the inside of JSON strings is touched, so numbers,
 * `true` and the structure of the line survive even when a secret happens to look like them.
 */
class LiteralSecrets {
  private readonly values = new Set<string>();
  private pattern: RegExp | undefined;
  private present: RegExp | undefined;
  /** Grows each time a new value is added (Logger.secretsGeneration). */
  generation = 0;

  add(values: Iterable<string>): void {
    const before = this.values.size;
    for (const v of values) if (typeof v === 'string' && v.length >= MIN_SECRET_LENGTH) this.values.add(v);
    if (this.values.size === before) return;
    this.generation++;
    // Matched in their JSON-escaped form, longest first so a secret containing another is removed whole;
    // the lookbehind (an even run of backslashes) keeps a match from starting inside an escape sequence.
    const escaped = [...this.values].map((v) => JSON.stringify(v).slice(1, -1)).sort((a, b) => b.length - a.length);
    this.pattern = new RegExp(`(?<=(?:^|[^\\\\])(?:\\\\\\\\)*)(?:${escaped.map(escapeRegExp).join('|')})`, 'g');
    this.present = new RegExp(escaped.map(escapeRegExp).join('|'));
  }

  /** A plain text (not a JSON line) with the secret values in it replaced. */
  scrubText(text: string): string {
    if (this.present === undefined || !this.present.test(JSON.stringify(text))) return text;
    return JSON.parse(this.scrub(JSON.stringify(text))) as string;
  }

  scrub(line: string): string {
    const pattern = this.pattern;
    // The cheap test first: a line that contains no secret at all is returned as it is.
    if (pattern === undefined || !this.present!.test(line)) return line;
    return line.replace(JSON_STRING, (token) => token.replace(pattern, REDACTED));
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
