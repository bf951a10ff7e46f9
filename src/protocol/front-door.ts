// The protocol checks every client message passes before it goes anywhere: media types, the era and
// version it speaks, and for modern requests the mirrored headers against the body. Pure functions over
// headers and the parsed message; the edge turns a refusal into an HTTP answer.

import type { IncomingHttpHeaders } from 'node:http';
import { ErrorCode, type JsonRpcMessage, type MessageKind } from './jsonrpc.js';
import { decodeHeaderValue } from './header-value.js';
import { paramShapeProblem } from './param-shapes.js';
import { META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, MODERN_CLIENT_REQUESTS, NAME_FIELD } from './methods.js';
import { DEFAULT_LEGACY_VERSION, isLegacyVersion, isModernVersion, SUPPORTED_VERSIONS, type ClientEra } from './versions.js';

/**
 * Refused before the message is accepted (the front door, sessions, the edge's limits): an HTTP status and
 * a JSON-RPC error body (2026-07-28/basic/transports/streamable-http.mdx: 400 for validation failures, with
 * the error's id when the message had one). One of the kinds of errors.ts `Refusal`; defined here because
 * protocol/ imports nothing outside itself.
 */
export interface TransportRefusal {
  kind: 'transport';
  /** Stable snake_case code, for logs, metrics and the fuzzer (e.g. `header_mismatch`, `body_too_large`). */
  code: string;
  status: number;
  rpcCode: number;
  message: string;
  data?: unknown;
  headers?: Record<string, string>;
  /** The policy entry that refused (a per-IP rate limit), by id. */
  rule?: string;
}

export type Admission = { ok: true; era: ClientEra; version: string } | { ok: false; refusal: TransportRefusal };

const refuse = (status: number, rpcCode: number, code: string, message: string, data?: unknown): Admission => ({
  ok: false,
  refusal: { kind: 'transport', code, status, rpcCode, message, ...(data !== undefined ? { data } : {}) },
});

/**
 * 2025-11-25/basic/transports.mdx §Sending Messages 1-2 and streamable-http.mdx §Sending Messages: a JSON
 * body, and an Accept that lists both response types.
 */
function mediaTypesRefusal(headers: IncomingHttpHeaders): Admission | undefined {
  if (!isJsonContentType(headers['content-type'])) {
    return refuse(415, ErrorCode.InvalidRequest, 'content_type', 'Unsupported Media Type: Content-Type must be application/json');
  }
  if (!accepts(headers.accept, 'application/json') || !accepts(headers.accept, 'text/event-stream')) {
    return refuse(406, ErrorCode.InvalidRequest, 'accept', 'Not Acceptable: Accept must list both application/json and text/event-stream');
  }
  return undefined;
}

/** The most messages one batch may hold: each is a call of its own, run concurrently. */
export const MAX_BATCH_MESSAGES = 64;

/**
 * POST of a JSON-RPC batch (a JSON array). 2025-03-26 allows them (2025-03-26/basic/transports.mdx §Sending
 * Messages 2; 2025-03-26/basic/index.mdx: implementations MUST support receiving batches); 2025-06-18
 * removed them, and 2026-07-28 has none. A request without MCP-Protocol-Version is a 2025-03-26 one
 * (streamable-http.mdx §Protocol Version Header) unless its session says otherwise, which the edge checks
 * once the session is admitted (sessionVersionRefusal). Each message is then admitted on its own (admitPost).
 */
export function admitBatch(headers: IncomingHttpHeaders, size: number): Admission {
  const media = mediaTypesRefusal(headers);
  if (media !== undefined) return media;
  const versionHeader = single(headers['mcp-protocol-version']);
  if (versionHeader !== undefined && versionHeader !== DEFAULT_LEGACY_VERSION) {
    return refuse(400, ErrorCode.InvalidRequest, 'batch', `Invalid request: batches are not supported after 2025-03-26 (this request says MCP-Protocol-Version ${versionHeader}); send one JSON-RPC message per POST`);
  }
  if (size === 0) return refuse(400, ErrorCode.InvalidRequest, 'batch', 'Invalid request: an empty batch');
  if (size > MAX_BATCH_MESSAGES) return refuse(400, ErrorCode.InvalidRequest, 'batch', `Invalid request: a batch holds at most ${MAX_BATCH_MESSAGES} messages; this one has ${size}`);
  return { ok: true, era: 'legacy', version: DEFAULT_LEGACY_VERSION };
}

/**
 * A legacy request inside a session whose initialize negotiated `negotiated`: why it is refused, or
 * undefined when it goes on, under `negotiated`. 2025-11-25/basic/transports.mdx §Protocol Version Header:
 * the client MUST send the header on every later request, and it SHOULD be the negotiated version; a
 * server without the header assumes 2025-03-26 only when it "has no other way to identify the version -
 * for example, by relying on the protocol version negotiated during initialization"; Gatehouse has that
 * way. So a request without the header speaks the session's version (a batch only where that is
 * 2025-03-26, the one revision that has them). A header is the client's word and is taken as it is sent,
 * even one that is not the session's version: that is a SHOULD, and clients break it (the official
 * conformance suite sends `2025-03-26` inside the sessions it negotiated 2025-11-25 for); refusing them
 * would shut out clients for a request Gatehouse serves safely either way (a batch is unbatched, each
 * message governed alone). Allocates nothing when the request goes on.
 */
export function sessionVersionRefusal(versionHeader: string | string[] | undefined, negotiated: string, batch: boolean): TransportRefusal | undefined {
  if (versionHeader !== undefined) return undefined;
  if (batch && negotiated !== DEFAULT_LEGACY_VERSION) {
    return { kind: 'transport', code: 'batch', status: 400, rpcCode: ErrorCode.InvalidRequest, message: `Invalid request: batches are not supported after 2025-03-26 (this session negotiated ${negotiated}); send one JSON-RPC message per POST` };
  }
  return undefined;
}

/** POST: one JSON-RPC message, already parsed once by the edge. */
export function admitPost(headers: IncomingHttpHeaders, kind: MessageKind, message: JsonRpcMessage): Admission {
  const media = mediaTypesRefusal(headers);
  if (media !== undefined) return media;
  // Every field Gatehouse reads has the type the schema gives it before anything reads it.
  const shapeProblem = paramShapeProblem(kind, message);
  if (shapeProblem !== undefined) return refuse(400, ErrorCode.InvalidParams, 'invalid_params', `Invalid params: ${shapeProblem}`);
  const versionHeader = single(headers['mcp-protocol-version']);
  const method = 'method' in message ? message.method : undefined;
  const bodyVersion = metaOf(message)?.[META_PROTOCOL_VERSION];

  if (versionHeader === undefined) {
    if (method === 'initialize') return { ok: true, era: 'legacy', version: DEFAULT_LEGACY_VERSION };
    if (bodyVersion !== undefined) {
      return refuse(400, ErrorCode.HeaderMismatch, 'header_missing', 'Header mismatch: MCP-Protocol-Version header is required');
    }
    // streamable-http.mdx §Protocol Version Header: a request without the header MAY be treated as 2025-03-26;
    // inside a session whose version is known, the edge takes that one instead (sessionVersionRefusal).
    return { ok: true, era: 'legacy', version: DEFAULT_LEGACY_VERSION };
  }
  if (isLegacyVersion(versionHeader)) {
    // streamable-http.mdx §Protocol Version Header: the header and the body's version must agree. A legacy
    // header over a modern body would be served as legacy and skip the modern header checks.
    if (typeof bodyVersion === 'string' && isModernVersion(bodyVersion)) return mismatch('MCP-Protocol-Version', versionHeader, bodyVersion);
    return { ok: true, era: 'legacy', version: versionHeader };
  }
  if (!isModernVersion(versionHeader)) {
    return refuse(400, ErrorCode.UnsupportedProtocolVersion, 'unsupported_version', `Unsupported protocol version: ${versionHeader}`, {
      supported: SUPPORTED_VERSIONS,
      requested: versionHeader,
    });
  }
  return admitModern(headers, kind, message, versionHeader);
}

function admitModern(headers: IncomingHttpHeaders, kind: MessageKind, message: JsonRpcMessage, version: string): Admission {
  if (kind === 'response') {
    // streamable-http.mdx §Sending Messages 4: modern clients never send JSON-RPC responses.
    return refuse(400, ErrorCode.InvalidRequest, 'response_not_allowed', 'Invalid request: a 2026-07-28 client does not send JSON-RPC responses');
  }
  const msg = message as { method: string; params?: Record<string, unknown> };
  const meta = metaOf(message);
  const bodyVersion = meta?.[META_PROTOCOL_VERSION];
  if (kind === 'request') {
    // 2026-07-28/basic/index.mdx §_meta: protocolVersion and clientCapabilities are required on every request.
    if (typeof bodyVersion !== 'string') {
      return refuse(400, ErrorCode.InvalidParams, 'meta_missing', `Invalid params: _meta["${META_PROTOCOL_VERSION}"] is required`);
    }
    const caps = meta?.[META_CLIENT_CAPABILITIES];
    if (caps === null || typeof caps !== 'object' || Array.isArray(caps)) {
      return refuse(400, ErrorCode.InvalidParams, 'meta_missing', `Invalid params: _meta["${META_CLIENT_CAPABILITIES}"] must be an object`);
    }
  }
  // Shapes are checked: a body version, when present, is a string.
  if (bodyVersion !== undefined && bodyVersion !== version) {
    return mismatch('MCP-Protocol-Version', version, bodyVersion as string);
  }
  // streamable-http.mdx §Server Validation: Mcp-Method (all requests) and Mcp-Name must match the body.
  const methodHeader = single(headers['mcp-method']);
  if (kind === 'request') {
    if (methodHeader === undefined) return refuse(400, ErrorCode.HeaderMismatch, 'header_missing', 'Header mismatch: Mcp-Method header is required');
  }
  if (methodHeader !== undefined && methodHeader !== msg.method) return mismatch('Mcp-Method', methodHeader, msg.method);
  const nameField = NAME_FIELD[msg.method];
  if (kind === 'request' && nameField !== undefined) {
    const bodyName = msg.params?.[nameField];
    const rawName = single(headers['mcp-name']);
    if (rawName === undefined) return refuse(400, ErrorCode.HeaderMismatch, 'header_missing', 'Header mismatch: Mcp-Name header is required');
    const decoded = decodeHeaderValue(rawName);
    if (!decoded.ok) return refuse(400, ErrorCode.HeaderMismatch, 'header_invalid', `Header mismatch: Mcp-Name ${decoded.reason}`);
    // Shapes are checked: every NAME_FIELD is a required string.
    if (decoded.value !== bodyName) return mismatch('Mcp-Name', decoded.value, bodyName as string);
  }
  if (kind === 'request' && !MODERN_CLIENT_REQUESTS.has(msg.method)) {
    // streamable-http.mdx §Protocol Version Header: an unimplemented method is 404 with -32601.
    return refuse(404, ErrorCode.MethodNotFound, 'method_not_found', `Method not found: ${msg.method}`);
  }
  return { ok: true, era: 'modern', version };
}

/** GET (legacy listen stream) and DELETE (legacy session end); modern clients use neither. */
export function admitStreamRequest(headers: IncomingHttpHeaders, httpMethod: 'GET' | 'DELETE'): Admission {
  const versionHeader = single(headers['mcp-protocol-version']);
  if (versionHeader !== undefined && isModernVersion(versionHeader)) {
    // streamable-http.mdx §Earlier Streamable HTTP Revisions: GET and DELETE get 405 from a modern endpoint.
    return { ok: false, refusal: { kind: 'transport', code: 'method_not_allowed', status: 405, rpcCode: ErrorCode.InvalidRequest, message: `${httpMethod} is not used by protocol ${versionHeader}; send POST`, headers: { allow: 'POST' } } };
  }
  if (versionHeader !== undefined && !isLegacyVersion(versionHeader)) {
    return refuse(400, ErrorCode.UnsupportedProtocolVersion, 'unsupported_version', `Unsupported protocol version: ${versionHeader}`, {
      supported: SUPPORTED_VERSIONS,
      requested: versionHeader,
    });
  }
  // 2025-11-25/basic/transports.mdx §Listening for Messages: the GET must accept text/event-stream.
  if (httpMethod === 'GET' && !accepts(headers.accept, 'text/event-stream')) {
    return refuse(406, ErrorCode.InvalidRequest, 'accept', 'Not Acceptable: GET needs Accept: text/event-stream');
  }
  return { ok: true, era: 'legacy', version: versionHeader ?? DEFAULT_LEGACY_VERSION };
}

function mismatch(header: string, headerValue: string, bodyValue: string): Admission {
  return refuse(400, ErrorCode.HeaderMismatch, 'header_mismatch', `Header mismatch: ${header} header value '${clip(headerValue)}' does not match body value '${clip(bodyValue)}'`);
}

function clip(s: string): string {
  return s.length > 100 ? `${s.slice(0, 100)}…` : s;
}

function metaOf(message: JsonRpcMessage): Record<string, unknown> | undefined {
  const params = (message as { params?: Record<string, unknown> }).params;
  const meta = params?._meta;
  return meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>) : undefined;
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function isJsonContentType(v: string | undefined): boolean {
  if (v === undefined) return false;
  const semi = v.indexOf(';');
  return (semi === -1 ? v : v.slice(0, semi)).trim().toLowerCase() === 'application/json';
}

/** Whether an Accept header admits a media type, wildcards included. */
export function accepts(accept: string | undefined, type: string): boolean {
  if (accept === undefined) return false;
  let ranges = acceptCache.get(accept);
  if (ranges === undefined) {
    ranges = accept.split(',').map((part) => part.split(';')[0]!.trim().toLowerCase());
    // A client sends the same Accept on every request: parsed once, not three times per request.
    if (accept.length <= ACCEPT_CACHE_KEY_MAX) {
      if (acceptCache.size >= ACCEPT_CACHE_MAX) acceptCache.clear();
      acceptCache.set(accept, ranges);
    }
  }
  const major = type.slice(0, type.indexOf('/'));
  for (const range of ranges) if (range === type || range === '*/*' || (range.endsWith('/*') && range.slice(0, -2) === major)) return true;
  return false;
}

/** Accept headers seen, as their media ranges; few distinct values, so a small bound is plenty. */
const acceptCache = new Map<string, readonly string[]>();
const ACCEPT_CACHE_MAX = 256;
const ACCEPT_CACHE_KEY_MAX = 256;
