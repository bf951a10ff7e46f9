// `${env:NAME}` and `${file:PATH}` interpolation inside YAML string scalars, applied before validation.
// Owns the syntax and its secret-safe messages; turning problems into located issues is load.ts's job.

import { isAbsolute, resolve } from 'node:path';
import { describeBytes, INTERPOLATED_FILE_MAX_BYTES, readFileBoundedSync } from './bounded-read.js';
import { contentDigest, unreadableDigest } from './file-digest.js';
import { isMap, isScalar, isSeq, parseDocument, type Document, type Scalar } from 'yaml';

export interface InterpolationContext {
  /** Where `${env:NAME}` looks names up. */
  env: NodeJS.ProcessEnv;
  /** Directory that relative `${file:PATH}` paths resolve against (the config file's directory). */
  baseDir: string;
  /**
   * Receives what each `${file:PATH}` read held (its resolved path, then file-digest.ts's digest or the
   * reason it could not be read): the watcher measures its first look against it.
   */
  filesRead?: Map<string, string>;
}

/**
 * A problem with one `${...}`; `missing` when only the secret is out of reach here (an unset variable, no
 * such file, a file this user may not read): a command that needs no secret (`audit`, `budgets`,
 * `check-config --env-optional`) warns and goes on, where the gateway's own user would read it.
 */
export interface Problem {
  message: string;
  missing: boolean;
}

export interface InterpolatedString {
  value: string;
  /** Human-readable problems; they name variables and paths, never the values read. */
  problems: Problem[];
}

/** A problem in one scalar of a YAML document: its key path and its offset in the source text. */
export interface InterpolationProblem extends Problem {
  path: Array<string | number>;
  offset: number;
}

// One left-to-right scan. The escape must be the first alternative so `$${env:X}` stays literal text, and a
// lone `${` without a closing brace is caught by the last one instead of passing through silently.
const TOKEN = /\$\$\{|\$\{([^}]*)\}|\$\{/g;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const USAGE = 'use ${env:NAME} or ${file:PATH}';
/** Read errors of a secret file that is fine where the gateway runs: absent here, or not this user's to read. A directory or a path through a file stays an error. */
const OUT_OF_REACH = new Set(['ENOENT', 'EACCES', 'EPERM']);

/** A value read through one `${env:...}` or `${file:...}`, and the key path of the scalar it went into. */
export interface InterpolatedValue {
  path: Array<string | number>;
  value: string;
}

/** Expands every `${env:...}`/`${file:...}` in `text`; `$${` yields a literal `${`. Substituted values are not re-scanned. */
export function interpolateString(text: string, ctx: InterpolationContext): InterpolatedString {
  return substitute(text, ctx, []);
}

/** As interpolateString; each value read is also pushed to `read`. */
function substitute(text: string, ctx: InterpolationContext, read: string[]): InterpolatedString {
  const problems: Problem[] = [];
  if (!text.includes('${')) return { value: text, problems };
  const value = text.replace(TOKEN, (match: string, expr: string | undefined) => {
    if (match === '$${') return '${';
    if (expr === undefined) {
      problems.push({ message: 'unterminated "${"; write $${ for a literal "${"', missing: false });
      return match;
    }
    const expanded = expand(expr, ctx, problems);
    if (expanded !== undefined) read.push(expanded);
    return expanded ?? match;
  });
  return { value, problems };
}

function expand(expr: string, ctx: InterpolationContext, problems: Problem[]): string | undefined {
  const colon = expr.indexOf(':');
  const kind = colon < 0 ? undefined : expr.slice(0, colon);
  const arg = expr.slice(colon + 1);
  if (kind === 'env') {
    if (!ENV_NAME.test(arg)) {
      problems.push({ message: `invalid environment variable name in "\${${expr}}"; ${USAGE}`, missing: false });
      return undefined;
    }
    const value = ctx.env[arg];
    if (value === undefined) problems.push({ message: `environment variable "${arg}" is not set`, missing: true });
    return value;
  }
  if (kind === 'file' && arg !== '') {
    const path = resolve(ctx.baseDir, arg);
    try {
      const content = readFileBoundedSync(path, INTERPOLATED_FILE_MAX_BYTES);
      ctx.filesRead?.set(path, contentDigest(content));
      // Secret files usually end with the newline an editor or `echo` added; it is never part of the secret.
      return content.toString('utf8').replace(/\r?\n$/, '');
    } catch (err) {
      ctx.filesRead?.set(path, unreadableDigest(err));
      const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
      // A relative path starts at the config file's directory, not where the command runs: say where it looked.
      const where = isAbsolute(arg) ? '' : ` (looked for at ${path}: a relative path starts at the config file's directory)`;
      problems.push({ message: readProblem(code, arg, where), missing: OUT_OF_REACH.has(code) });
      return undefined;
    }
  }
  problems.push({ message: `unknown interpolation "\${${expr}}"; ${USAGE}`, missing: false });
  return undefined;
}

/** Why a `${file:...}` could not be read, naming the path as written and never what the file held. */
function readProblem(code: string, arg: string, where: string): string {
  if (code === 'ENOENT') return `no such file: "${arg}"${where}`;
  if (code === 'EFBIG') return `file "${arg}" is larger than ${describeBytes(INTERPOLATED_FILE_MAX_BYTES)}, the most a \${file:...} may read`;
  return `cannot read file "${arg}": ${code}`;
}

/**
 * The files the config `text` reads through `${file:PATH}`, resolved against `baseDir`, each once: found in
 * the string values of the parsed document, as interpolation finds them, so a comment, a key, or a path
 * written with YAML escapes names exactly what a load would read.
 */
export function referencedFiles(text: string, baseDir: string): string[] {
  if (!text.includes('${')) return [];
  const files = new Set<string>();
  forEachStringValue(parseDocument(text, { prettyErrors: false }), (value) => {
    if (!value.includes('${')) return;
    for (const [match, expr] of value.matchAll(TOKEN)) {
      if (match === '$${' || expr === undefined || !expr.startsWith('file:') || expr.length === 5) continue;
      files.add(resolve(baseDir, expr.slice(5)));
    }
  });
  return [...files];
}

/** Calls `visit` for every string scalar that is a value (never a key); aliases are skipped (see below). */
function forEachStringValue(doc: Document, visit: (value: string, node: Scalar, path: Array<string | number>) => void): void {
  const walk = (node: unknown, path: Array<string | number>): void => {
    if (isMap(node)) {
      for (const pair of node.items) walk(pair.value, [...path, isScalar(pair.key) ? String(pair.key.value) : String(pair.key)]);
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => walk(item, [...path, i]));
    } else if (isScalar(node) && typeof node.value === 'string') {
      visit(node.value, node, path);
    }
  };
  walk(doc.contents, []);
}

/**
 * Interpolates every string scalar that is a value (never a key) in `doc`, in place, and returns the problems.
 * Each value read is pushed to `read` with its path (the log scrubber takes some of them: see secrets.ts).
 * Aliases are skipped: they share the anchored node, which is interpolated where it is defined.
 */
export function interpolateDocument(doc: Document, ctx: InterpolationContext, read?: InterpolatedValue[]): InterpolationProblem[] {
  const problems: InterpolationProblem[] = [];
  forEachStringValue(doc, (value, node, path) => {
    const values: string[] = [];
    const result = substitute(value, ctx, values);
    for (const v of values) read?.push({ path, value: v });
    node.value = result.value;
    const offset = node.range?.[0] ?? 0;
    for (const problem of result.problems) problems.push({ path, offset, ...problem });
  });
  return problems;
}
