// `x-mcp-header` annotations of a tool's inputSchema (2026-07-28/server/tools.mdx §x-mcp-header) and the
// `Mcp-Param-*` headers they imply (basic/transports/streamable-http.mdx §Custom Headers from Tool
// Parameters): validating an annotation set, checking a request's headers against its body, and
// producing the headers for a request Gatehouse sends itself.

import type { IncomingHttpHeaders } from 'node:http';
import { ownValue } from './own-keys.js';
import { describeValue } from './describe.js';
import { decodeHeaderValue, encodeHeaderValue } from './header-value.js';

export interface ParamHeader {
  /** Lower-cased full header name, e.g. `mcp-param-region`. */
  header: string;
  /** Property path from the arguments root. */
  path: string[];
  type: 'string' | 'integer' | 'boolean';
}

export type Annotations = { ok: true; headers: ParamHeader[] } | { ok: false; reason: string };

/** RFC 9110 §5.6.2 token characters. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Keywords whose subschemas are not "statically reachable" through `properties` alone. */
const OTHER_SUBSCHEMAS = ['items', 'prefixItems', 'additionalProperties', 'patternProperties', 'contains', 'not', 'if', 'then', 'else', 'oneOf', 'anyOf', 'allOf', '$defs', 'definitions', 'dependentSchemas', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems'];
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** Reads and validates every annotation of a schema; any invalid one makes the whole tool invalid. */
export function readAnnotations(inputSchema: unknown): Annotations {
  const headers: ParamHeader[] = [];
  const seen = new Set<string>();
  let problem: string | undefined;

  const visit = (schema: unknown, path: string[], reachable: boolean, depth: number): void => {
    if (problem || depth > 32 || schema === null || typeof schema !== 'object') return;
    if (Array.isArray(schema)) {
      for (const s of schema) visit(s, path, false, depth + 1);
      return;
    }
    const s = schema as Record<string, unknown>;
    if ('x-mcp-header' in s) {
      const name = s['x-mcp-header'];
      if (!reachable) return void (problem = `x-mcp-header on a property not reachable through "properties" alone (${path.join('.') || 'root'})`);
      if (typeof name !== 'string' || !TOKEN.test(name)) return void (problem = `x-mcp-header ${JSON.stringify(name)} is not an HTTP token`);
      const type = s.type;
      if (type !== 'string' && type !== 'integer' && type !== 'boolean') return void (problem = `x-mcp-header "${name}" is on a property of type ${JSON.stringify(type)}; only string, integer and boolean are allowed`);
      const header = `mcp-param-${name.toLowerCase()}`;
      if (seen.has(header)) return void (problem = `x-mcp-header "${name}" is used twice`);
      seen.add(header);
      headers.push({ header, path, type });
    }
    if (s.properties !== null && typeof s.properties === 'object' && !Array.isArray(s.properties)) {
      for (const [key, sub] of Object.entries(s.properties)) visit(sub, [...path, key], reachable, depth + 1);
    }
    for (const kw of OTHER_SUBSCHEMAS) if (kw in s) visit(kw === '$defs' || kw === 'definitions' || kw === 'patternProperties' || kw === 'dependentSchemas' ? Object.values(s[kw] as object) : s[kw], path, false, depth + 1);
  };
  visit(inputSchema, [], true, 0);
  return problem ? { ok: false, reason: problem } : { ok: true, headers };
}

function valueAt(args: unknown, path: string[]): unknown {
  let v = args;
  for (const key of path) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    // Own members only: an argument left out must not be found as what every object inherits.
    v = ownValue(v as Record<string, unknown>, key);
  }
  return v;
}

/**
 * streamable-http.mdx §Server Behavior for Custom Headers: each annotated value present in the body must be
 * mirrored by its header, equal after decoding (integers compared numerically). Returns the problem, if any.
 */
export function checkParamHeaders(params: readonly ParamHeader[], args: unknown, headers: IncomingHttpHeaders): string | undefined {
  for (const p of params) {
    const value = valueAt(args, p.path);
    const raw = headers[p.header];
    const name = displayName(p.header);
    if (value === undefined || value === null) {
      if (raw !== undefined) return `${name} header is present but the argument it mirrors is absent`;
      continue;
    }
    if (typeof raw !== 'string') return `${name} header is required when "${p.path.join('.')}" is given`;
    const decoded = decodeHeaderValue(raw);
    if (!decoded.ok) return `${name} ${decoded.reason}`;
    if (!sameValue(p.type, decoded.value, value)) return `${name} header value '${describeValue(decoded.value)}' does not match body value '${describeValue(value)}'`;
  }
  return undefined;
}

/** Every Mcp-Param header's name starts so (streamable-http.mdx §Custom Headers from Tool Parameters). */
const PARAM_PREFIX = 'mcp-param-';

/**
 * The Mcp-Param headers among a request's, as they came (names lower-cased). An intermediary that does not
 * recognize one MUST forward it (streamable-http.mdx §Server Behavior for Custom Headers), so Gatehouse
 * passes them on wherever it sends the request itself; a repeated one never gets here (edge/duplicate-headers.ts).
 */
export function mcpParamHeaders(headers: IncomingHttpHeaders | Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key in headers) {
    const value = headers[key];
    if (typeof value === 'string' && key.length > PARAM_PREFIX.length && key.toLowerCase().startsWith(PARAM_PREFIX)) out[key.toLowerCase()] = value;
  }
  return out;
}

/** The headers a conforming client would send for these arguments (streamable-http.mdx §Client Behavior). */
export function paramHeadersFor(params: readonly ParamHeader[], args: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of params) {
    const value = valueAt(args, p.path);
    // Only primitives can be mirrored; any other value breaks the tool's schema and is refused there.
    if (typeof value === 'string') out[p.header] = encodeHeaderValue(value);
    else if (typeof value === 'number' || typeof value === 'boolean') out[p.header] = encodeHeaderValue(`${value}`);
  }
  return out;
}

function sameValue(type: ParamHeader['type'], header: string, body: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof body === 'string' && header === body;
    case 'boolean':
      return typeof body === 'boolean' && header === String(body);
    case 'integer': {
      if (typeof body !== 'number' || !/^\s*-?\d+(\.0+)?\s*$/.test(header)) return false;
      const n = Number(header);
      return Math.abs(n) <= MAX_SAFE && n === body;
    }
  }
}

function displayName(header: string): string {
  return header.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}
