// The parts of the edge that another front on the same listener reuses (the 2024-11-05 SSE endpoint):
// the front door and auth, the one read and parse of a body, refusals, and running a call through the
// pipeline. Types only; server.ts implements them, so every front shares one set of checks.

import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AuthVerdict, ChallengedEndpoint } from '../auth/authenticator.js';
import type { SessionBinding } from '../auth/session-binding.js';
import type { AuthRefusal, Refusal } from '../errors.js';
import type { CallContext } from '../pipeline/context.js';
import type { RefusedRequest } from '../pipeline/events.js';
import type { Outcome } from '../pipeline/outcome.js';
import type { Principal } from '../pipeline/principal.js';
import type { JsonRpcId, JsonRpcMessage, MessageKind } from '../protocol/jsonrpc.js';
import type { TraceContext } from '../protocol/trace-context.js';

/** What the edge learnt of one request, for its `end` event. */
export interface CallRecord {
  callId: string;
  started: number;
  httpMethod: string;
  ctx?: CallContext;
  method?: string;
  era?: string;
  subject?: string;
  refusal?: string;
  stage?: string;
  /** The refusal carries the upstream's own failure (errors.ts upstreamFailureOf): an upstream error, not a stage's refusal. */
  upstreamFailed?: boolean;
  /** The policy entry that refused, by id. */
  rule?: string;
  toolError?: boolean;
  /** The JSON-RPC error code of the answer, when the edge read it (see CallEndEvent.rpcCode). */
  rpcCode?: number;
  /** The request, when the edge refused it before its call existed: its end event carries it (the trace it belongs to). */
  refused?: RefusedRequest;
  /** Waits the edge made before the call existed (the per-address rate limit), published once it does. */
  waits?: Array<{ stage: string; wait: string; seconds: number; endedAt: number }>;
  /** The legacy session the request uses, left once the request is over (server.ts leaveSession). */
  session?: SessionUse;
  /** A batch's HTTP request: each of its messages publishes its own `end`, the request none. */
  batch?: boolean;
  /** A message of the batch was answered 404 for its session: the binding ends with the request. */
  sessionGone?: boolean;
  /**
   * A stream opened only to listen (a GET, subscriptions/listen): it has no end of its own, so its client
   * closing it once it was served is its normal end, `ok`, not an abort (stream-end.ts).
   */
  listening?: true;
}

/**
 * A request's use of a legacy session: plain data, not a closure over the request. A closure kept on the
 * record whose scope held the record and the response made V8 keep later requests' young objects reachable
 * from the old generation while the edge's code ran unoptimized (bench/README.md §Pretenuring): about 3 KB
 * promoted per legacy call until TurboFan had compiled it, for good under `--no-opt`.
 */
export interface SessionUse {
  id: string;
  method: 'POST' | 'GET' | 'DELETE';
  /** Marks the request done on the session's binding (SessionBindings.enter). */
  leave: () => void;
}

/** A request past the front door: its credential's verdict (a missing one only when a body follows) and address. */
export interface Caller {
  authed: AuthVerdict;
  clientAddress: string;
  /** The endpoint it called, whose metadata a challenge names. */
  at: ChallengedEndpoint;
}

/** One JSON-RPC message, read and parsed once, from an authenticated caller. */
export interface Received {
  principal: Principal;
  message: JsonRpcMessage;
  kind: MessageKind;
  id: JsonRpcId | null;
  method?: string;
  /** The client's exact bytes. */
  body: Buffer;
  /** What an `initialize` declares the client can do (2026-07-28 terms); empty for other messages. */
  declared: Record<string, unknown>;
}

/** A JSON-RPC batch (a JSON array body) from an authenticated caller; its elements are not classified yet. */
export interface ReceivedBatch {
  principal: Principal;
  batch: unknown[];
}

/** One request as the edge counts it: `done` publishes its `end` event and, when counted, ends it in flight. */
export interface EdgeCall {
  readonly record: CallRecord;
  done(status: number, aborted: boolean): void;
}

export interface EdgeCore {
  /** The edge's identity in the pipeline's events. */
  readonly token: object;
  readonly sessions: SessionBinding;
  /**
   * Starts accounting for a request; `counted`: it is work a drain waits for. `internal`: Gatehouse makes
   * it itself (the HTTP+SSE endpoint's listen GET and closing DELETE), so its `end` says so and the request
   * log and the request metrics leave it out.
   */
  startCall(httpMethod: string, counted: boolean, internal?: boolean): EdgeCall;
  /**
   * The front door: repeated headers, Host/Origin, the HTTP method (`allow`), credentials in the URL,
   * the failed-auth limit, the credential, the per-address limit. Undefined when refused (already answered).
   * A promise only when something had to be waited for.
   */
  admitCaller(req: IncomingMessage, res: ServerResponse, record: CallRecord, allow: readonly string[], where: string, at?: ChallengedEndpoint): Caller | undefined | Promise<Caller | undefined>;
  /** Reads, checks and parses the body; a missing credential is refused here. Undefined when refused. A promise only while the body is still arriving. */
  readMessage(req: IncomingMessage, res: ServerResponse, record: CallRecord, caller: Caller): Received | ReceivedBatch | undefined | Promise<Received | ReceivedBatch | undefined>;
  /** Trace context from the headers, added to the message's `_meta` (and the bytes re-encoded) when missing there. */
  traced(headers: IncomingHttpHeaders, received: Received): { body: Buffer; trace?: TraceContext };
  /** A refusal made at the edge: published, counted, then written. */
  refuse(res: ServerResponse, record: CallRecord, stage: 'admission' | 'auth', id: JsonRpcId | null, refusal: Refusal): void;
  /** The rest of the pipeline; a legacy session its answer issues is bound to the caller before it returns. */
  runCall(record: CallRecord, ctx: CallContext): Promise<Outcome>;
  /** Whether the access stage may answer this method with a step-up under the running config (a rule with `onMissingScopes: challenge`). */
  mayStepUp(method: string | undefined): boolean;
  /** A step-up refusal as endpoint `at` says it: its challenge naming that endpoint's protected-resource metadata. */
  stepUpAt(refusal: AuthRefusal, at: ChallengedEndpoint): AuthRefusal;
}
