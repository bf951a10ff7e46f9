// Maps transport-level failures (undici and socket errors) to the gateway's failure codes.

import { errors as undiciErrors } from 'undici';
import { GatewayError } from '../errors.js';
import { SseEventTooLarge } from '../protocol/sse.js';
import { BodyTooLarge } from '../pipeline/relay-body.js';

export function toGatewayError(err: unknown, upstream: string): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof SseEventTooLarge || err instanceof BodyTooLarge) return new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${upstream}" ${err.message}`, upstream, { cause: err });
  const code = (err as { code?: string } | undefined)?.code;
  if (err instanceof undiciErrors.ConnectTimeoutError || err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError) {
    return new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', `Upstream "${upstream}" did not answer in time`, upstream, { cause: err });
  }
  if (err instanceof undiciErrors.ClientDestroyedError || err instanceof undiciErrors.ClientClosedError) {
    return new GatewayError('GW_ERR_SHUTTING_DOWN', 'Gatehouse is shutting down', upstream, { cause: err });
  }
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' || code === 'UND_ERR_SOCKET') {
    return new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', `Upstream "${upstream}" is unreachable (${code})`, upstream, { cause: err });
  }
  return new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', `Upstream "${upstream}" failed: ${(err as Error)?.message ?? String(err)}`, upstream, { cause: err });
}

