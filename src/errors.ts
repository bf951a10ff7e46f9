// Every way a call can end other than with the upstream's answer, in one union, and the one function that
// renders any of them for the wire in the client's era (DESIGN.md §2). Stages and adapters return a
// Refusal; only the edge calls `toWire`, and only its output ever reaches a client: no stacks, no internal
// messages beyond `message`.

import { toModernResult } from './protocol/era-shapes.js';
import { ErrorCode, errorResponse, type JsonRpcId, type JsonRpcResponse } from './protocol/jsonrpc.js';
import type { TransportRefusal } from './protocol/front-door.js';
import type { ClientEra } from './protocol/versions.js';

export type { TransportRefusal };

export type GatewayErrorCode =
  | 'GW_ERR_UPSTREAM_UNREACHABLE'
  | 'GW_ERR_UPSTREAM_TIMEOUT'
  | 'GW_ERR_UPSTREAM_BAD_RESPONSE'
  | 'GW_ERR_UPSTREAM_EXITED'
  | 'GW_ERR_UPSTREAM_OVERLOADED'
  | 'GW_ERR_SHUTTING_DOWN'
  /**
   * Gatehouse holds as many upstream sessions for this caller (or in all) as it may, every one with a call
   * on it: a new one is refused rather than opened past the bound (a stdio session is a child process).
   * Gatehouse's own limit, not the upstream's failure: no breaker or upstream-error count sees it.
   */
  | 'GW_ERR_SESSION_LIMIT'
  /** The store (SQLite or Redis) cannot be reached: governed calls are refused rather than run ungoverned. */
  | 'GW_ERR_STATE_UNAVAILABLE';

interface ErrorShape {
  status: number;
  retryable: boolean;
  /** The `Retry-After` of a 503, in seconds (1 unless given). */
  retryAfterS?: number;
  /**
   * Gatehouse's refusal before anything reached the upstream, wherever it is written (as the answer, or in
   * an answer's stream): recorded as refused (request line, metrics, audit), never as a failure.
   */
  refusal?: true;
}

/** HTTP status per failure: 502 the upstream failed, 503 it is unavailable for now, 504 it was too slow. */
const SHAPES: Record<GatewayErrorCode, ErrorShape> = {
  GW_ERR_UPSTREAM_UNREACHABLE: { status: 502, retryable: true },
  GW_ERR_UPSTREAM_TIMEOUT: { status: 504, retryable: true },
  GW_ERR_UPSTREAM_BAD_RESPONSE: { status: 502, retryable: false },
  GW_ERR_UPSTREAM_EXITED: { status: 503, retryable: true },
  GW_ERR_UPSTREAM_OVERLOADED: { status: 503, retryable: true },
  GW_ERR_SHUTTING_DOWN: { status: 503, retryable: true },
  // A session frees up when a call on it ends: not at once, as with a restarting child.
  GW_ERR_SESSION_LIMIT: { status: 503, retryable: true, retryAfterS: 5, refusal: true },
  GW_ERR_STATE_UNAVAILABLE: { status: 503, retryable: true },
};

/** A failure that is not the client's fault (upstream down, timed out, crashed); thrown, then refused. */
export class GatewayError extends Error {
  readonly status: number;
  readonly retryable: boolean;
  /** The `Retry-After` its 503 answer carries, in seconds. */
  readonly retryAfterS: number;
  /** Gatehouse refused the call before anything reached the upstream (ErrorShape.refusal). */
  readonly refusedBeforeUpstream: boolean;
  constructor(
    readonly code: GatewayErrorCode,
    message: string,
    readonly upstream?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'GatewayError';
    const shape = SHAPES[code];
    this.status = shape.status;
    this.retryable = shape.retryable;
    this.retryAfterS = shape.retryAfterS ?? 1;
    this.refusedBeforeUpstream = shape.refusal === true;
  }
}

/**
 * Refused by authentication (2026-07-28/basic/authorization.mdx §Error Handling): 400 malformed, 401 with a
 * challenge naming the protected-resource metadata, 403 insufficient scope, 503 when the key set or the
 * introspection endpoint is down (fail closed).
 */
export interface AuthRefusal {
  kind: 'auth';
  code: string;
  status: 400 | 401 | 403 | 503;
  message: string;
  /** `WWW-Authenticate` (and `Retry-After` for 503), built by the authenticator. */
  headers: Record<string, string>;
  /** A credential was presented and found wanting (counted against the address's failure limit). */
  rejectedCredential: boolean;
  /** For a step-up (403 insufficient_scope): the scopes its challenge names, so another endpoint can name its own metadata. */
  scopes?: readonly string[];
}

/** A JSON-RPC error in an otherwise normal answer: unknown tool (-32602), invalid cursor, and the like. */
export interface ProtocolRefusal {
  kind: 'protocol';
  code: string;
  rpcCode: number;
  message: string;
  data?: unknown;
  /** The policy entry that refused (an egress rule judging a prompt's arguments), by id; `default` for the built-in defaults. */
  rule?: string;
}

/** Refusal codes a model can act on (DESIGN.md §7), answered as a tool result with `isError: true`. */
export type ToolRefusalCode =
  | 'invalid_arguments'
  | 'schema_unsupported'
  | 'invalid_output'
  | 'egress_blocked'
  | 'rate_limited'
  | 'budget_exhausted'
  | 'upstream_unavailable'
  | 'approval_pending'
  | 'approval_rejected'
  | 'approval_expired'
  | 'approval_limit_reached'
  | 'idempotency_key_required'
  | 'idempotency_key_conflict'
  | 'outcome_unknown'
  | 'tool_changed';

/** A refusal the model can read and act on (tools.mdx §Error Handling): a tool result, not an error. */
export interface ToolRefusal {
  kind: 'tool';
  code: ToolRefusalCode;
  message: string;
  /** More of the `{ code, message }` error (e.g. `errors` for invalid arguments), wherever it goes (`toolRefusalResult`). */
  details?: Record<string, unknown>;
  /** `_meta` entries under the `dev.gatehouse/` prefix (run_id, tool_ref, retry_after, quota, approval_id). */
  meta?: Record<string, unknown>;
  /** The policy entry (egress rule, rate limit, budget, breaker) that refused, by id; `default` for the built-in defaults. */
  rule?: string;
  /**
   * The called tool declares an outputSchema (set by `refusalOfTool`): the result then carries no
   * `structuredContent`, which that schema would have to allow, and `{ code, message }` goes in `_meta`.
   */
  outputSchema?: true;
  /**
   * The call was a 2025-11-25 task-augmented tools/call (`params.task`; set by `refusalOfTool`): its caller
   * reads a CreateTaskResult or an error, never a CallToolResult, so the refusal is a JSON-RPC error.
   */
  task?: true;
}

/** Something failed on the way (the upstream, or Gatehouse shutting down). */
export interface FailureRefusal {
  kind: 'failure';
  error: GatewayError;
}

export type Refusal = TransportRefusal | AuthRefusal | ProtocolRefusal | ToolRefusal | FailureRefusal;

/** The codes of the upstream's own failures (unreachable, timed out, a bad answer, exited, overloaded). */
const UPSTREAM_FAILURE_PREFIX = 'GW_ERR_UPSTREAM_';

/**
 * The upstream's failure a refusal carries, when that is what it is: the call reached for the upstream and
 * the upstream failed it, which the audit, the request log and the metrics tell apart from a stage's refusal
 * (a limit, a rule, an open breaker) and from Gatehouse's own failures (shutting down, its store down).
 */
export function upstreamFailureOf(refusal: Refusal | undefined): GatewayError | undefined {
  return refusal?.kind === 'failure' && refusal.error.code.startsWith(UPSTREAM_FAILURE_PREFIX) ? refusal.error : undefined;
}

/**
 * Failures where the upstream cannot have seen the request: the connection was never made, or Gatehouse
 * had no session to send it on (its own session limit, which opens none). Such a call did not run: its
 * idempotency key, its approved run and its budget spend are given back. (Kept, a write refused for the
 * session limit held its key as a call that may have run: its retry, told to come back in 5 s, was
 * `outcome_unknown` for the key's whole lifetime.)
 */
export function neverSent(err: GatewayError): boolean {
  if (err.code === 'GW_ERR_SESSION_LIMIT') return true;
  const code = (err.cause as { code?: unknown } | undefined)?.code;
  return err.code === 'GW_ERR_UPSTREAM_UNREACHABLE' && (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH');
}

/** The policy entry a refusal names (egress rule, rate limit, budget, breaker, per-address limit), if any. */
export function ruleOf(r: Refusal): string | undefined {
  return r.kind === 'tool' || r.kind === 'transport' || r.kind === 'protocol' ? r.rule : undefined;
}

/** The stable snake_case code of any refusal, for logs, metrics and events. */
export function refusalCode(r: Refusal): string {
  return r.kind === 'failure' ? r.error.code.slice('GW_ERR_'.length).toLowerCase() : r.code;
}

/**
 * A request whose id a request of the same session still running holds, where Gatehouse holds the session
 * (2025-11-25/basic/index.mdx §Requests: an id is not used twice in a session).
 */
export function duplicateId(id: JsonRpcId): ProtocolRefusal {
  return {
    kind: 'protocol',
    code: 'duplicate_request_id',
    rpcCode: ErrorCode.InvalidRequest,
    message: `Request id ${JSON.stringify(id)} is held by a request of this session that is still running; a session's request ids must differ`,
  };
}

/** An upstream's answer nested too deeply to write again (protocol/json-text.ts): the upstream's failure. */
export function tooDeep(upstream?: string): GatewayError {
  return new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', 'The upstream answered with JSON nested too deeply to pass on', upstream);
}

/** Where `asGatewayError` tells what it kept from the client (a Logger). */
interface ErrorLog {
  error(msg: string, fields?: Record<string, unknown>): void;
}

/**
 * `err` as a failure for the client. A GatewayError is one already. Anything else is a fault no failure
 * code names (a fault in Gatehouse, a library's surprise): its text can quote internals (a file path, an
 * address, `Maximum call stack size exceeded`), so the client gets `code` with a message that says only
 * that, and the error itself goes to the log, beside the call id the client was given.
 */
export function asGatewayError(err: unknown, code: GatewayErrorCode, log: ErrorLog, where: { upstream?: string; callId?: string }): GatewayError {
  if (err instanceof GatewayError) return err;
  log.error('an unexpected error ended a call; the client was told only that', { err, ...where });
  const message = where.upstream !== undefined ? `Upstream "${where.upstream}" could not be served: an unexpected error in Gatehouse (its log has the details)` : 'An unexpected error in Gatehouse (its log has the details)';
  return new GatewayError(code, message, where.upstream, { cause: err });
}

export function failure(error: GatewayError): FailureRefusal {
  return { kind: 'failure', error };
}

export interface WireAnswer {
  status: number;
  headers: Record<string, string>;
  body: JsonRpcResponse;
}

export interface WireContext {
  era: ClientEra;
  /** The JSON-RPC id of the request refused, or null (a notification, or no message read yet). */
  id: JsonRpcId | null;
  callId: string;
}

/** The one rendering of a refusal: status, headers and a JSON-RPC body, shaped for the client's era. */
export function toWire(r: Refusal, ctx: WireContext): WireAnswer {
  switch (r.kind) {
    case 'transport':
      return { status: r.status, headers: { ...r.headers }, body: errorResponse(ctx.id, r.rpcCode, r.message, r.data) };
    case 'auth':
      // The body names the reason; the challenge in the headers is what OAuth clients act on.
      return { status: r.status, headers: { ...r.headers }, body: errorResponse(ctx.id, ErrorCode.InvalidRequest, r.message, { reason: r.code }) };
    case 'protocol':
      return { status: 200, headers: {}, body: errorResponse(ctx.id, r.rpcCode, r.message, r.data) };
    case 'tool':
      if (r.task === true) return { status: 200, headers: {}, body: errorResponse(ctx.id, ErrorCode.InternalError, r.message, { code: r.code, message: r.message, ...r.details, ...r.meta }) };
      return { status: 200, headers: {}, body: { jsonrpc: '2.0', id: ctx.id, result: toolRefusalResult(r, ctx.era) } };
    case 'failure': {
      const err = r.error;
      return {
        status: err.status,
        headers: err.status === 503 ? { 'retry-after': String(err.retryAfterS) } : {},
        body: errorResponse(ctx.id, ErrorCode.InternalError, err.message, {
          code: err.code,
          retryable: err.retryable,
          ...(err.upstream !== undefined ? { upstream: err.upstream } : {}),
          callId: ctx.callId,
        }),
      };
    }
  }
}

/** Where a refusal of a call to a tool with an outputSchema carries its `{ code, message }` (and details). */
export const ERROR_META = 'dev.gatehouse/error';

/**
 * DESIGN.md §2: `structuredContent.error = { code, message }` plus details, the reason as text for models
 * that read only `content`, and our `_meta` keys; modern clients also get `resultType`. For a tool that
 * declares an outputSchema the error goes in `_meta` under ERROR_META and there is no `structuredContent`:
 * server/tools.mdx §Output Schema says a server MUST give such a tool structured results that conform to
 * it, and the v1 SDK's Client.callTool checks `structuredContent` against it even with `isError` set (it
 * threw -32602, so the model never read the refusal). The spec wins over DESIGN.md here.
 */
function toolRefusalResult(r: ToolRefusal, era: ClientEra): Record<string, unknown> {
  const error = { code: r.code, message: r.message, ...r.details };
  const result: Record<string, unknown> = { content: [{ type: 'text', text: r.message }], isError: true };
  if (r.outputSchema === true) result._meta = { ...r.meta, [ERROR_META]: error };
  else {
    result.structuredContent = { error };
    if (r.meta !== undefined) result._meta = r.meta;
  }
  return era === 'modern' ? toModernResult('tools/call', result, undefined, { ttlMs: 0, cacheScope: 'private' }) : result;
}

/** What `refusalOfTool` needs of a call: its route (the tool's definition) and its request. */
export interface RefusedCall {
  route?: { outputSchema?: unknown };
  message?: unknown;
}

/**
 * `refusal` as the caller must get it. A tool refusal of a call to a tool that declares an outputSchema is
 * marked so (ToolRefusal.outputSchema); of a task-augmented call (`params.task`), marked `task`: tasks.mdx
 * §Behavior Requirements, a receiver that accepts one MUST answer with a CreateTaskResult, so one that does
 * not answers with a JSON-RPC error (-32603, §Error Handling), whose `data` carries what the result would
 * have. Any other refusal is as it was. Applied wherever a refusal of a resolved call is rendered
 * (pipeline/final-answer.ts, outcome-stream.ts) or leaves the pipeline for the edges (edge/server.ts
 * callEnded), so every era, adapter and transport shapes it alike. A tool Gatehouse has no definition of
 * (an unlisted name on the pass-through) is not known to declare an outputSchema.
 */
export function refusalOfTool(refusal: Refusal, call: RefusedCall): Refusal {
  if (refusal.kind !== 'tool') return refusal;
  const schema = call.route?.outputSchema !== undefined && refusal.outputSchema !== true;
  const task = refusal.task !== true && isTaskCall(call.message);
  if (!schema && !task) return refusal;
  return { ...refusal, ...(schema ? { outputSchema: true as const } : {}), ...(task ? { task: true as const } : {}) };
}

/** A 2025-11-25 task-augmented request: `params.task` present. */
function isTaskCall(message: unknown): boolean {
  const params = (message as { params?: unknown } | undefined)?.params;
  return typeof params === 'object' && params !== null && Object.hasOwn(params, 'task');
}

/**
 * 503 session_cap with Retry-After (-32600, data.details.reason session_cap): no room for a new legacy
 * session, because each session that counts against the cap has a call in flight (or sessions still opening
 * fill it). Used by the session tables' cap (upstream/session-table.ts) and the edge's per-caller bindings
 * (auth/session-binding.ts). `message` names the cap and what fills it.
 */
export function sessionCapRefusal(message: string): TransportRefusal {
  // data.details.reason as on the 404 of an ended session and the listen_cap refusal: a client can tell it apart.
  return { kind: 'transport', code: 'session_cap', status: 503, rpcCode: ErrorCode.InvalidRequest, message, data: { details: { reason: 'session_cap' } }, headers: { 'retry-after': '5' } };
}
