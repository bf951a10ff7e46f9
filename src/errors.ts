// Failures that are not the client's fault (upstream down, timed out, crashed) and the one function that
// maps them to the wire. Refusals of bad client input live with the stage that refuses them.

import { ErrorCode, errorResponse, type JsonRpcId, type JsonRpcResponse } from './protocol/jsonrpc.js';

export type GatewayErrorCode =
  | 'GW_ERR_UPSTREAM_UNREACHABLE'
  | 'GW_ERR_UPSTREAM_TIMEOUT'
  | 'GW_ERR_UPSTREAM_BAD_RESPONSE'
  | 'GW_ERR_UPSTREAM_EXITED'
  | 'GW_ERR_UPSTREAM_OVERLOADED'
  | 'GW_ERR_SHUTTING_DOWN';

interface ErrorShape {
  status: number;
  retryable: boolean;
}

/** HTTP status per failure: 502 the upstream failed, 503 it is unavailable for now, 504 it was too slow. */
const SHAPES: Record<GatewayErrorCode, ErrorShape> = {
  GW_ERR_UPSTREAM_UNREACHABLE: { status: 502, retryable: true },
  GW_ERR_UPSTREAM_TIMEOUT: { status: 504, retryable: true },
  GW_ERR_UPSTREAM_BAD_RESPONSE: { status: 502, retryable: false },
  GW_ERR_UPSTREAM_EXITED: { status: 503, retryable: true },
  GW_ERR_UPSTREAM_OVERLOADED: { status: 503, retryable: true },
  GW_ERR_SHUTTING_DOWN: { status: 503, retryable: true },
};

export class GatewayError extends Error {
  readonly status: number;
  readonly retryable: boolean;
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
  }
}

export interface WireError {
  status: number;
  headers: Record<string, string>;
  body: JsonRpcResponse;
}

/** The only shape of a failure a client ever sees: no stacks, no internal messages beyond `message`. */
export function gatewayErrorToWire(err: GatewayError, id: JsonRpcId | null, callId: string): WireError {
  const headers: Record<string, string> = {};
  if (err.status === 503) headers['retry-after'] = '1';
  return {
    status: err.status,
    headers,
    body: errorResponse(id, ErrorCode.InternalError, err.message, {
      code: err.code,
      retryable: err.retryable,
      ...(err.upstream !== undefined ? { upstream: err.upstream } : {}),
      callId,
    }),
  };
}
