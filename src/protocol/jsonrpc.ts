// JSON-RPC 2.0 framing: the message shapes, one-pass classification of a parsed body, and error codes.
// Nothing here does I/O; the edge parses a body once and hands the result around.

export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: Record<string, unknown>;
}
export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown>;
}
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}
export interface JsonRpcResponse {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  result?: Record<string, unknown>;
  error?: JsonRpcErrorObject;
}
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** Standard and MCP error codes (shared/spec/schema/2026-07-28/schema.json, DESIGN.md §2). */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** Legacy session unknown or ended (HTTP 404). */
  SessionNotFound: -32001,
  HeaderMismatch: -32020,
  MissingClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
} as const;

export type MessageKind = 'request' | 'notification' | 'response';

/** What the edge learns from one parse of a POST body. */
export type Classified =
  | { ok: true; kind: MessageKind; message: JsonRpcMessage }
  /** `batch`: the body was a JSON array, kept for the one revision that allows batches (2025-03-26). */
  | { ok: false; code: number; message: string; batch?: unknown[] };

export function classifyBody(body: Buffer, maxDepth = 64): Classified {
  const text = body.toString('utf8');
  // Bounded nesting keeps every later recursive walk (stringify, schema checks) safe from hostile depth.
  // JSON nested deeper than maxDepth opens and closes more than maxDepth brackets: a shorter text that
  // opens that many is no JSON at all, which JSON.parse says.
  const members = membersIfShallow(text, maxDepth);
  if (members < 0 && text.length > 2 * maxDepth + 1) return { ok: false, code: ErrorCode.ParseError, message: `Parse error: JSON nested deeper than ${maxDepth} levels` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { ok: false, code: ErrorCode.ParseError, message: 'Parse error: the body is not valid JSON' };
  }
  // A member name given twice in one object: JSON.parse keeps the last, a server reading the same bytes may
  // keep the first, and Gatehouse would then check one call (its tool name, its arguments) while the
  // upstream ran another. RFC 8259 §4 leaves such objects' meaning to each parser; I-JSON (RFC 7493 §2.3)
  // forbids them. Each member of the text is one colon outside strings; fewer own members parsed means two
  // had the same name.
  if (members > 0 && typeof parsed === 'object' && parsed !== null && ownMembers(parsed) !== members) {
    return { ok: false, code: ErrorCode.InvalidRequest, message: 'Invalid request: an object names the same member twice; servers disagree on which one counts, so Gatehouse does not pass it on' };
  }
  return classifyMessage(parsed);
}

/**
 * One pass over the text outside strings: the number of members (a colon each), or -1 as soon as brackets
 * nest deeper than `maxDepth`.
 */
export function membersIfShallow(text: string, maxDepth: number): number {
  let depth = 0;
  let members = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x3a) members++;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return -1;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return members;
}

/**
 * Members of every object in a parsed value, counted (its depth is bounded by the caller). `for…in` is the
 * quickest walk of a request's few small objects (about 0.12 µs for a tools/call's); what JSON.parse makes
 * inherits nothing enumerable, so it sees exactly their own members.
 */
function ownMembers(value: object): number {
  let n = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (typeof v === 'object' && v !== null) n += ownMembers(v);
    }
    return n;
  }
  for (const key in value) {
    n++;
    const v: unknown = (value as Record<string, unknown>)[key];
    if (typeof v === 'object' && v !== null) n += ownMembers(v);
  }
  return n;
}

export function classifyMessage(parsed: unknown): Classified {
  if (Array.isArray(parsed)) {
    return { ok: false, code: ErrorCode.InvalidRequest, message: 'Invalid request: batches are not supported after 2025-03-26; send one JSON-RPC message per POST', batch: parsed };
  }
  if (parsed === null || typeof parsed !== 'object') {
    return { ok: false, code: ErrorCode.InvalidRequest, message: 'Invalid request: expected a JSON-RPC object' };
  }
  const m = parsed as Record<string, unknown>;
  if (m.jsonrpc !== '2.0') {
    return { ok: false, code: ErrorCode.InvalidRequest, message: 'Invalid request: "jsonrpc" must be "2.0"' };
  }
  const hasId = 'id' in m;
  if (typeof m.method === 'string') {
    if (m.params !== undefined && (m.params === null || typeof m.params !== 'object' || Array.isArray(m.params))) {
      return { ok: false, code: ErrorCode.InvalidRequest, message: 'Invalid request: "params" must be an object' };
    }
    if (!hasId) return { ok: true, kind: 'notification', message: m as unknown as JsonRpcNotification };
    if (!isValidId(m.id)) {
      return { ok: false, code: ErrorCode.InvalidRequest, message: 'Invalid request: "id" must be a string or an integer' };
    }
    return { ok: true, kind: 'request', message: m as unknown as JsonRpcRequest };
  }
  if (hasId && ('result' in m || 'error' in m)) {
    return { ok: true, kind: 'response', message: m as unknown as JsonRpcResponse };
  }
  return { ok: false, code: ErrorCode.InvalidRequest, message: 'Invalid request: not a JSON-RPC request, notification or response' };
}

/**
 * Whether a response carries exactly one outcome: a `result`, or an `error` object and no result (JSON-RPC
 * 2.0 §5). One with both (`"error":null` beside a result, as JSON-RPC 1.0 wrote it), or neither, is read one
 * way by the audit and another by some client, so a governed call's answer must pass this
 * (pipeline/final-answer.ts). A constant-time look at what was already parsed.
 */
export function carriesOneOutcome(m: { result?: unknown; error?: unknown }): boolean {
  const { result, error } = m;
  if (error === undefined) return result !== undefined;
  return result === undefined && error !== null && typeof error === 'object' && !Array.isArray(error);
}

function isValidId(id: unknown): id is JsonRpcId {
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id));
}

export function errorResponse(id: JsonRpcId | null, code: number, message: string, data?: unknown): JsonRpcResponse {
  const error: JsonRpcErrorObject = data === undefined ? { code, message } : { code, message, data };
  return { jsonrpc: '2.0', id, error };
}

/** The id of a message, when it has one worth echoing in an error. */
export function idOf(message: JsonRpcMessage | undefined): JsonRpcId | null {
  if (message && 'id' in message && message.id !== undefined) return message.id;
  return null;
}
