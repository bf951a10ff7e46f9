// What a call ends with, as stages and upstream adapters return it. Only the edge turns an Outcome into
// HTTP (status, headers, JSON or SSE); nothing past the edge touches the response.

import type { GatewayError, Refusal } from '../errors.js';
import type { JsonRpcId, JsonRpcMessage, JsonRpcResponse } from '../protocol/jsonrpc.js';
import type { RelayBody } from './relay-body.js';
import type { CallStream, StreamRefusal } from './call-stream.js';

export type AnswerHeaders = Record<string, string>;

export type Outcome =
  /** One JSON-RPC message as the whole body (`application/json`). */
  | { kind: 'json'; status: number; message: JsonRpcMessage; headers?: AnswerHeaders }
  /** No body: 202 for an accepted notification or response, 200 for a session ended by DELETE. */
  | { kind: 'empty'; status: number; headers?: AnswerHeaders }
  /**
   * Messages produced over time. A call's stream is answered as JSON when its response comes alone and as
   * SSE once anything precedes it (2025-11-25/basic/transports.mdx §Sending Messages 5); a listen stream is
   * SSE from the start and kept alive.
   */
  | { kind: 'stream'; stream: CallStream; headers?: AnswerHeaders }
  /**
   * The upstream's own answer, relayed byte for byte (same-era pass-through): SSE event by event, anything
   * else chunk by chunk. `requestId` is what a broken stream's error event answers.
   */
  | { kind: 'relay'; status: number; headers: AnswerHeaders; body: RelayBody; requestId: JsonRpcId | null; upstream: string; failureOf(err: unknown): GatewayError; read?: RelayRead; refused?: RelayRefusal }
  /** Refused or failed, rendered by errors.ts `toWire`; `stage` names who refused, once known. */
  | { kind: 'refused'; refusal: Refusal; stage?: string };

/**
 * A refusal a stage wrote in place of a relayed SSE body's answer event (final-answer.ts), with its stage,
 * so the edge records the call as refused, not as the tool error the written event reads as. A holder
 * rather than a value: while the body streams, the refusal is made after the outcome was handed on.
 */
export interface RelayRefusal {
  value: StreamRefusal | undefined;
}

/**
 * A relayed JSON body as a stage that looked at its final answer already read it (final-answer.ts): valid
 * only for that `body` object, so an outcome given another body does not carry a stale reading.
 */
export interface RelayRead {
  body: RelayBody;
  text: string;
  response: JsonRpcResponse | undefined;
  /**
   * The body was the response, but stands as none (`response` undefined): it named a member twice, or did
   * not carry exactly one of `result` and `error` (final-answer.ts `misread`).
   */
  misread?: Misread;
}

/** Why a response to the request cannot stand as its answer: a member named twice, or not one outcome. */
export type Misread = 'twice' | 'notOneOutcome';

/** A refusal not yet tagged with its stage (adapters; the upstream stage tags and publishes it). */
export function refused(refusal: Refusal): Outcome {
  return { kind: 'refused', refusal };
}

export function json(message: JsonRpcMessage, headers?: AnswerHeaders): Outcome {
  return headers ? { kind: 'json', status: 200, message, headers } : { kind: 'json', status: 200, message };
}

/** 202 Accepted, no body: what a notification or a client's response gets. */
export const ACCEPTED: Outcome = Object.freeze({ kind: 'empty', status: 202 }) as Outcome;
