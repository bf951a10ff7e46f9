// Loads a Gatehouse config: YAML → interpolation → JSON Schema validation with defaults → semantic checks.
// Every problem becomes a located ConfigIssue and all of them are thrown together as one ConfigError.
// Turning config into the runtime IR is not done here.

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml';
import { CONFIG_FILE_MAX_BYTES, describeBytes, readFileBounded } from './bounded-read.js';
import { interpolateDocument, type InterpolatedValue } from './interpolate.js';
import type { GatehouseConfig } from './types.js';

/** One problem in a config, located in its source (line and column are 1-based; 0 for configs built in code). */
export interface ConfigIssue {
  file: string;
  line: number;
  column: number;
  /** Dotted key path such as `upstreams[0].url`, or `(root)`. */
  path: string;
  message: string;
}

/** Thrown for any invalid config; the message lists every issue, one per line. */
export class ConfigError extends Error {
  readonly issues: ConfigIssue[];
  constructor(issues: ConfigIssue[]) {
    super(issues.map(formatIssue).join('\n'));
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

/** `file:line:column path: message`, the form editors and terminals turn into links; `file: message` for the file as a whole. */
export function formatIssue(issue: ConfigIssue): string {
  if (issue.line === 0 && issue.path === '(root)') return `${issue.file}: ${issue.message}`;
  return `${issue.file}:${issue.line}:${issue.column} ${issue.path}: ${issue.message}`;
}

/** How a config is read: with `optionalSecrets`, secrets that are absent (unset variables, missing files) are warnings. */
export interface LoadOptions {
  optionalSecrets?: boolean;
  /** Receives the warnings (absent secrets under `optionalSecrets`). */
  warnings?: ConfigIssue[];
  /** Receives every value read through `${env:...}` or `${file:...}`, with its key path (for collectSecrets). */
  interpolated?: InterpolatedValue[];
  /** Receives what each file read through `${file:...}` held (InterpolationContext.filesRead). */
  filesRead?: Map<string, string>;
}

/** `upstreams[0].url`; keys that would read ambiguously are quoted: `headers["a.b"]`. */
export function formatPath(segments: readonly PathSegment[]): string {
  if (segments.length === 0) return '(root)';
  let out = '';
  for (const seg of segments) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

// Read at module init so a missing schema fails at startup; compiled lazily, once per process.
// src/config/load.ts and dist/config/load.js both sit two levels below the package root.
const SCHEMA_URL = new URL('../../config/gatehouse.schema.json', import.meta.url);
const SCHEMA = JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as Record<string, unknown>;
let compiled: ValidateFunction | undefined;
// Named by where it is: "config/gatehouse.example.yaml" existed only from the root of a clone, never for an
// installed package or from another directory.
const EXAMPLE = fileURLToPath(new URL('../../config/gatehouse.example.yaml', import.meta.url));

function validator(): ValidateFunction {
  // strictRequired is off because the url/command discriminator names keys defined in the branch schemas.
  compiled ??= new Ajv({ allErrors: true, useDefaults: true, strict: true, strictRequired: false }).compile(SCHEMA);
  return compiled;
}

export type PathSegment = string | number;
export type Position = { line: number; column: number };
/** An issue before it is located: where (as a key path) and what. */
interface IssueDraft {
  segments: PathSegment[];
  /** Point at the key rather than its value (unknown keys, bad key names). */
  onKey: boolean;
  message: string;
  keyword?: string;
  /** The key named by a required/additionalProperties error. */
  key?: string;
  /** The JSON type a type error wanted. */
  expected?: string;
  /** What to do about it, when YAML's reading of a scalar is the likely cause. */
  hint?: string;
}
export type Locator = (segments: readonly PathSegment[], onKey: boolean) => Position;

/** Reads `file` and parses it; `${file:...}` paths resolve against the file's directory. Issues name the file as given. */
export async function loadConfigFile(file: string, env?: NodeJS.ProcessEnv, options: LoadOptions = {}): Promise<GatehouseConfig> {
  return (await loadConfigFileWithText(file, env, options)).config;
}

/**
 * As loadConfigFile, with what the config was read from (what a watcher of the file compares its first look
 * with): the file's text, and what each file it read through `${file:...}` held (LoadOptions.filesRead).
 */
export async function loadConfigFileWithText(file: string, env?: NodeJS.ProcessEnv, options: LoadOptions = {}): Promise<{ config: GatehouseConfig; text: string; files: ReadonlyMap<string, string> }> {
  let text: string;
  try {
    text = (await readFileBounded(file, CONFIG_FILE_MAX_BYTES)).toString('utf8');
  } catch (err) {
    throw new ConfigError([{ file, line: 0, column: 0, path: '(root)', message: unreadable(err as NodeJS.ErrnoException) }]);
  }
  const files = options.filesRead ?? new Map<string, string>();
  return { config: parseConfigText(text, { fileName: file, baseDir: dirname(resolve(file)), ...(env !== undefined ? { env } : {}), ...options, filesRead: files }), text, files };
}

function unreadable(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ENOENT':
      return `no such file (give the path of a YAML config file; ${EXAMPLE} is a start)`;
    case 'EISDIR':
      return 'this is a directory, not a config file';
    case 'EFBIG':
      return `larger than ${describeBytes(CONFIG_FILE_MAX_BYTES)}, the most a config file may hold`;
    case 'EACCES':
    case 'EPERM':
      return 'permission denied: the file cannot be read by this user';
    default:
      return `the file cannot be read (${err.code ?? err.message})`;
  }
}

// yaml's own wording for these addresses library users, not people editing a config file.
const YAML_MESSAGES: Record<string, string> = {
  DUPLICATE_KEY: 'duplicate key',
  MULTIPLE_DOCS: 'the file must contain a single YAML document (remove the extra "---")',
};

/** Parses, interpolates and validates YAML text; `fileName` is only used to label issues. */
export function parseConfigText(text: string, opts: { fileName: string; baseDir: string; env?: NodeJS.ProcessEnv } & LoadOptions): GatehouseConfig {
  const file = opts.fileName;
  const lineCounter = new LineCounter();
  // Merge keys (`<<: *defaults`) go with the aliases YAML 1.2 already reads: without them `<<` was taken for a
  // key of its own, refused as unknown, and the settings it was to bring in were missing.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, merge: true });
  const at = (offset: number): Position => {
    const pos = lineCounter.linePos(offset);
    return { line: pos.line, column: pos.col };
  };
  // A syntax error makes the rest of the tree unreliable, so validating it would only add noise. yaml often
  // reports one mistake several ways on the same line; the first report is the telling one.
  if (doc.errors.length > 0) {
    const syntax = doc.errors.map((e) => ({
      file, ...at(e.pos[0]), path: '(root)', message: `YAML syntax error: ${YAML_MESSAGES[e.code] ?? e.message}`,
    }));
    throw new ConfigError(syntax.filter((issue, i) => syntax.findIndex((other) => other.line === issue.line) === i));
  }
  const read: InterpolatedValue[] = [];
  const interpolation = interpolateDocument(doc, { env: opts.env ?? process.env, baseDir: opts.baseDir, ...(opts.filesRead !== undefined ? { filesRead: opts.filesRead } : {}) }, read);
  opts.interpolated?.push(...read);
  const issues: ConfigIssue[] = [];
  // Absent secrets, when they may be (a file checked where its secrets do not live, as in CI), are warned
  // about; their values keep the `${...}` text, and schema findings about them are skipped as below.
  const absent = new Set<string>();
  for (const p of interpolation) {
    const issue = { file, ...at(p.offset), path: formatPath(p.path), message: p.message };
    if (p.missing && opts.optionalSecrets) {
      opts.warnings?.push(issue);
      absent.add(issue.path);
    } else issues.push(issue);
  }
  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    // yaml throws for an alias without an anchor before it, naming neither line nor key: find it here.
    const unresolved = unresolvedAliases(doc);
    for (const a of unresolved) issues.push({ file, ...at(a.offset), path: formatPath(a.path), message: `the alias *${a.name} names no anchor defined before it; write &${a.name} on the value to share, above its first alias` });
    if (unresolved.length === 0) issues.push({ file, line: 1, column: 1, path: '(root)', message: (err as Error).message });
    throw new ConfigError(issues);
  }
  // A value whose interpolation failed still holds its `${...}` text; schema errors about it would be noise.
  const skip = new Set([...issues.map((i) => i.path), ...absent]);
  return check(raw, file, yamlLocator(doc, at), skip, issues, new Set(read.map((v) => formatPath(v.path))));
}

/** The aliases in `doc` that no anchor before them defines, with their key paths and offsets. */
function unresolvedAliases(doc: Document): Array<{ path: PathSegment[]; offset: number; name: string }> {
  const found: Array<{ path: PathSegment[]; offset: number; name: string }> = [];
  const walk = (node: unknown, path: PathSegment[]): void => {
    if (isAlias(node)) {
      if (node.resolve(doc) === undefined) found.push({ path, offset: startOf(node) ?? 0, name: node.source });
    } else if (isMap(node)) {
      for (const pair of node.items) walk(pair.value, [...path, isScalar(pair.key) ? String(pair.key.value) : String(pair.key)]);
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => walk(item, [...path, i]));
    }
  };
  walk(doc.contents, []);
  return found;
}

/** Validates a config built in code (e.g. from CLI flags), applying defaults to a copy; issues are at 0:0. */
export function validateConfigObject(raw: unknown, displayName = '(config)'): GatehouseConfig {
  return check(structuredClone(raw), displayName, () => ({ line: 0, column: 0 }), new Set(), []);
}

/**
 * `interpolated`: the key paths whose value came (in part) through `${env:...}` or `${file:...}`. Such a value
 * is a string, so where the schema wants a number or a switch (`port: ${env:PORT}`), the type error says why.
 */
function check(raw: unknown, file: string, locate: Locator, skip: Set<string>, issues: ConfigIssue[], interpolated: ReadonlySet<string> = new Set()): GatehouseConfig {
  const toIssue = (d: IssueDraft): ConfigIssue => {
    const path = formatPath(d.segments);
    const what = d.keyword === 'type' && interpolated.has(path) ? LITERAL[d.expected ?? ''] : undefined;
    const hint = what === undefined ? d.hint : `a value read through \${env:...} or \${file:...} is always a string; write ${what} itself here`;
    const message = hint === undefined ? d.message : `${d.message}: ${hint}`;
    return { file, ...locate(d.segments, d.onKey), path, message };
  };
  if (raw === null || raw === undefined) {
    issues.push(toIssue({ segments: [], onKey: false, message: 'the configuration is empty; at least "upstreams" is required' }));
    throw new ConfigError(issues);
  }
  const validate = validator();
  const valid = validate(raw);
  const drafts = valid ? [] : explainSchemaErrors(validate.errors ?? [], raw);
  drafts.push(...findDuplicates(raw, ['upstreams'], 'name', 'upstream name'));
  drafts.push(...findDuplicates(raw, ['auth', 'apiKeys'], 'id', 'API key id'));
  // Findings about a key (unknown, badly named) stand even when its value could not be interpolated.
  for (const d of drafts) if (d.onKey || !skip.has(formatPath(d.segments))) issues.push(toIssue(d));
  if (issues.length > 0) {
    // Stable sort: issues on the same spot keep the order in which they were found.
    issues.sort((a, b) => a.line - b.line || a.column - b.column);
    throw new ConfigError(issues);
  }
  return raw as GatehouseConfig;
}

/** Flags the second and later list items that repeat `field` (a string) of an earlier one. */
function findDuplicates(raw: unknown, listPath: string[], field: string, what: string): IssueDraft[] {
  let list: unknown = raw;
  for (const key of listPath) list = isRecord(list) ? list[key] : undefined;
  if (!Array.isArray(list)) return [];
  const firstIndex = new Map<string, number>();
  const drafts: IssueDraft[] = [];
  list.forEach((item: unknown, i) => {
    const value = isRecord(item) ? item[field] : undefined;
    if (typeof value !== 'string') return;
    const first = firstIndex.get(value);
    if (first === undefined) firstIndex.set(value, i);
    // The value itself is not repeated in the message: it may have come from an interpolated secret.
    else drafts.push({ segments: [...listPath, i, field], onKey: false, message: `duplicate ${what}; ${formatPath([...listPath, first])} already uses it` });
  });
  return drafts;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Maps a key path back to the YAML node it came from: the key itself when `onKey`, else the value. */
export function yamlLocator(doc: Document, at: (offset: number) => Position): Locator {
  return (segments, onKey) => {
    let node: unknown = doc.contents;
    let offset = startOf(node) ?? 0;
    for (const [i, seg] of segments.entries()) {
      if (isAlias(node)) node = node.resolve(doc);
      if (isMap(node)) {
        const pair = node.items.find((p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(seg));
        if (pair === undefined) break;
        offset = startOf(pair.key) ?? offset;
        if (onKey && i === segments.length - 1) break;
        node = pair.value;
      } else if (isSeq(node) && typeof seg === 'number') {
        node = node.items[seg];
      } else {
        break;
      }
      // An empty value (`port:`) has no text of its own; its key is the better place to point at.
      const start = startOf(node);
      if (start !== undefined && !(isScalar(node) && node.source === '')) offset = start;
    }
    return at(offset);
  };
}

function startOf(node: unknown): number | undefined {
  if (typeof node !== 'object' || node === null || !('range' in node)) return undefined;
  const range = (node as { range?: [number, number, number] | null }).range;
  return range?.[0];
}

// ---- Schema errors in words ----------------------------------------------------------------------------

// Value-level keywords, most telling first: only one of them is reported per path (a number given for a
// URL fails its type, not also its pattern).
const VALUE_KEYWORDS = ['type', 'oneOf', 'enum', 'const', 'maxLength', 'pattern', 'minimum', 'maximum', 'minLength', 'minItems', 'maxItems', 'maxProperties'];
const EXPECTED: Record<string, string> = {
  string: 'a string', integer: 'an integer', number: 'a number', boolean: 'true or false', object: 'a mapping (key: value)', array: 'a list',
};
// What to write in place of an interpolated string, by the type the schema wanted (a string never fails so).
const LITERAL: Record<string, string> = { integer: 'the integer', number: 'the number', boolean: 'true or false' };
const GOT: Record<string, string> = {
  string: 'a string', number: 'a number', boolean: 'a boolean', object: 'a mapping', array: 'a list', null: 'an empty value',
};
// Keyed by the exact pattern strings in gatehouse.schema.json; an unlisted pattern falls back to quoting it.
const PATTERNS: Record<string, string> = {
  '^/': 'must start with "/"',
  '^https?://[^\\s/?#]+[^\\s]*$': 'must be an http:// or https:// URL',
  '^rediss?://': 'must be a redis:// or rediss:// URL',
  '^[A-Za-z0-9_-]{1,32}$': 'must be 1-32 letters, digits, "_" or "-"',
  '^[A-Za-z0-9_.:-]{1,64}$': 'must be 1-64 letters, digits, "_", ".", ":" or "-"',
  '^sha256:[0-9a-f]{64}$': 'must be "sha256:" followed by 64 lowercase hex digits (see gatehouse hash-key)',
  "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$": 'is not a valid HTTP header name',
  '^[A-Za-z_][A-Za-z0-9_]*$': 'is not a valid environment variable name',
  '^[A-Za-z0-9.-]+$': 'must be a DNS name (letters, digits, "." and "-")',
};
const UPSTREAM_ONEOF = '#/properties/upstreams/items/oneOf';
// Keys either kind of upstream knows: when the kind is ambiguous, only other keys are surely unknown.
const UPSTREAM_KEYS = new Set(['httpUpstream', 'stdioUpstream'].flatMap((name) => {
  const defs = SCHEMA['definitions'] as Record<string, { properties?: object }> | undefined;
  return Object.keys(defs?.[name]?.properties ?? {});
}));

function explainSchemaErrors(errors: ErrorObject[], data: unknown): IssueDraft[] {
  const drafts: IssueDraft[] = [];
  for (const e of errors) {
    // `if` and `propertyNames` only summarise errors reported on their own; so do the oneOf branches.
    if (e.keyword === 'if' || e.keyword === 'propertyNames' || /\/oneOf\/\d+\//.test(e.schemaPath)) continue;
    drafts.push(describe(e, data));
  }
  return prune(drafts);
}

function describe(e: ErrorObject, data: unknown): IssueDraft {
  const { segments, value } = resolvePointer(e.instancePath, data);
  const p = e.params as Record<string, unknown>;
  const at = (message: string): IssueDraft => ({ segments, onKey: false, message, keyword: e.keyword });
  // Errors from a propertyNames schema are about a key, which is where they belong.
  if (e.propertyName !== undefined) {
    const message = e.keyword === 'maxLength' ? tooLong(p['limit']) : PATTERNS[String(p['pattern'])] ?? 'is not an allowed key';
    return { ...at(message), segments: [...segments, e.propertyName], onKey: true };
  }
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String(p['additionalProperty']);
      const near = nearest(key, knownKeys(e.schemaPath));
      return { ...at(near === undefined ? 'unknown key' : `unknown key; did you mean ${near}?`), segments: [...segments, key], onKey: true, key };
    }
    case 'required': {
      const key = String(p['missingProperty']);
      return { ...at(`missing required key "${key}"`), key };
    }
    case 'type': {
      const expected = String(p['type']);
      const hint = scalarHint(expected, value);
      return { ...at(`expected ${EXPECTED[expected] ?? expected}, got ${GOT[jsonType(value)] ?? jsonType(value)}`), expected, ...(hint !== undefined ? { hint } : {}) };
    }
    case 'enum':
      return at(`must be one of: ${(p['allowedValues'] as unknown[]).join(', ')}`);
    case 'const':
      return at(`must be ${JSON.stringify(p['allowedValue'])}`);
    case 'pattern':
      return at(PATTERNS[String(p['pattern'])] ?? `must match the pattern ${String(p['pattern'])}`);
    case 'minimum':
    case 'maximum':
      return at(`must be at ${e.keyword === 'minimum' ? 'least' : 'most'} ${String(p['limit'])}`);
    case 'minLength':
    case 'minItems':
      return at(p['limit'] === 1 ? 'must not be empty' : `must have at least ${String(p['limit'])} ${e.keyword === 'minLength' ? 'characters' : 'items'}`);
    case 'maxLength':
      return at(tooLong(p['limit']));
    case 'maxItems':
      return at(`must have at most ${String(p['limit'])} items`);
    case 'maxProperties':
      return at(`must have at most ${String(p['limit'])} keys`);
    case 'oneOf':
      if (e.schemaPath === UPSTREAM_ONEOF) {
        // passingSchemas is an array when both branches matched, null when none did.
        const both = Array.isArray(p['passingSchemas']);
        return at(`an upstream needs either "url" (Streamable HTTP) or "command" (stdio)${both ? ', not both' : ''}`);
      }
      return at(e.message ?? 'is not valid');
    default:
      return at(e.message ?? 'is not valid');
  }
}

/** The value is not quoted back: it may be a secret read through `${file:...}`. */
function tooLong(limit: unknown): string {
  return `must have at most ${String(limit)} characters`;
}

/**
 * YAML reads an unquoted 2024 or an all-digit token as a number, and (1.2) yes/no/on/off as strings: the fix,
 * when that is the likely cause. The value is not repeated: it may be a token.
 */
function scalarHint(expected: string, value: unknown): string | undefined {
  if (expected === 'string' && (typeof value === 'number' || typeof value === 'boolean')) return 'YAML reads it as one; put the value in quotes';
  if (expected === 'boolean' && typeof value === 'string' && /^(yes|no|on|off|y|n)$/i.test(value)) return 'write true or false (YAML 1.2 reads yes, no, on and off as strings)';
  return undefined;
}

/** Drops the echoes of one mistake, so each mistake is reported once. */
function prune(drafts: IssueDraft[]): IssueDraft[] {
  const pathOf = (d: IssueDraft): string => formatPath(d.segments);
  const typed = new Set(drafts.filter((d) => d.keyword === 'type').map(pathOf));
  // An upstream with both or neither of url/command was checked as a guessed kind, so the guess's findings
  // about kind-specific keys are unreliable; its name and truly unknown keys are still worth reporting.
  const ambiguous = drafts.filter((d) => d.keyword === 'oneOf' && !typed.has(pathOf(d))).map((d) => d.segments);
  const hidden = (d: IssueDraft): boolean => ambiguous.some((up) => {
    if (d.keyword === 'oneOf' || !up.every((seg, i) => d.segments[i] === seg)) return false;
    const sub = d.segments[up.length];
    if (sub === undefined) return d.keyword === 'required' && d.key !== 'name';
    if (sub === 'name') return false;
    return !(d.keyword === 'additionalProperties' && d.segments.length === up.length + 1 && !UPSTREAM_KEYS.has(String(sub)));
  });
  const rank = (d: IssueDraft): number => {
    const i = VALUE_KEYWORDS.indexOf(d.keyword ?? '');
    return i < 0 ? VALUE_KEYWORDS.length : i;
  };
  const seenValue = new Set<string>();
  const seen = new Set<string>();
  const kept: IssueDraft[] = [];
  for (const d of [...drafts].sort((a, b) => rank(a) - rank(b))) {
    const path = pathOf(d);
    if ((typed.has(path) && d.keyword !== 'type') || hidden(d)) continue;
    if (VALUE_KEYWORDS.includes(d.keyword ?? '')) {
      if (seenValue.has(path)) continue;
      seenValue.add(path);
    }
    if (seen.has(`${path}\n${d.message}`)) continue;
    seen.add(`${path}\n${d.message}`);
    kept.push(d);
  }
  return kept;
}

/** Turns an ajv instancePath (JSON Pointer) into key path segments, and finds the value it points at. */
function resolvePointer(pointer: string, data: unknown): { segments: PathSegment[]; value: unknown } {
  const segments: PathSegment[] = [];
  let value = data;
  if (pointer === '') return { segments, value };
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(value)) {
      segments.push(Number(key));
      value = value[Number(key)];
    } else {
      segments.push(key);
      value = isRecord(value) ? value[key] : undefined;
    }
  }
  return { segments, value };
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'array' : typeof value;
}

/** The keys the schema allows where an additionalProperties error was raised (its schemaPath's parent). */
function knownKeys(schemaPath: string): string[] {
  let node: unknown = SCHEMA;
  for (const part of schemaPath.replace(/^#\//, '').split('/').slice(0, -1)) {
    if (!isRecord(node)) return [];
    node = node[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return isRecord(node) && isRecord(node['properties']) ? Object.keys(node['properties']) : [];
}

/** The known key closest to a misspelt one, if it is close: at most two edits, and fewer than half its length. */
function nearest(key: string, known: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const d = editDistance(key.toLowerCase(), name.toLowerCase());
    if (d <= 2 && d < Math.max(2, name.length / 2) && (best === undefined || d < best.distance)) best = { name, distance: d };
  }
  return best?.name;
}

/** Levenshtein distance, with adjacent swaps counted as one edit (hsot → host). */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}
